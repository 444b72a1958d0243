"""The sample corpus's labelled repairs (shared/sample/repairs-labelled.jsonl), made again.

One near miss per sentence of the sample documents, each made by one known edit: the edits that
keep the meaning (punctuation dropped, a filler word dropped, spacing) are labelled faithful,
the ones that change it (a figure, a negation, a content word swapped) unfaithful. Each is
repaired at threshold 0 with guards off, so every claim that reaches the alignment stage has a
score; a row is ``{score, faithful, group}`` with the sentence as its group (one edit per
sentence: independent examples). Synthetic, so a threshold calibrated on it is calibrated for
these edits; it is there to show `groundswell calibrate` at work.

``python -m tests.shared.repair.sample_labels > shared/sample/repairs-labelled.jsonl``
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

from groundswell.shared.repair import Repairer, get_repair_policy

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "sample" / "corpus" / "documents"
SENTENCE = re.compile(r"[A-Z][^.!?\n]{40,220}[.!?]")
FILLER = ("the", "a", "an", "of", "that", "also")


def edit(sentence: str, rng: random.Random) -> tuple[str, bool] | None:
    words = sentence.split()
    kind = rng.randrange(6)
    if kind == 0:
        return re.sub(r"[,;:()]", "", sentence), True
    if kind == 1:
        fillers = [i for i, w in enumerate(words) if w.lower() in FILLER]
        if not fillers:
            return None
        del words[rng.choice(fillers)]
        return " ".join(words), True
    if kind == 2:
        return "  ".join(words), True
    if kind == 3:
        digits = [m.start() for m in re.finditer(r"\d", sentence)]
        if not digits:
            return None
        i = rng.choice(digits)
        return sentence[:i] + str((int(sentence[i]) + 1) % 10) + sentence[i + 1 :], False
    if kind == 4:
        verbs = [i for i, w in enumerate(words) if w in ("is", "was", "are", "were", "will", "may")]
        if not verbs:
            return None
        words.insert(verbs[0] + 1, "not")
        return " ".join(words), False
    content = [i for i, w in enumerate(words) if len(w) > 6 and w.isalpha()]
    if len(content) < 2:
        return None
    a, b = rng.sample(content, 2)
    words[a] = words[b]
    return " ".join(words), False


def rows(seed: int = 2026) -> Iterator[dict]:
    rng = random.Random(seed)
    policy = get_repair_policy("default").with_changes(
        repair_threshold=0.0, numeric_guard=False, polarity_guard=False
    )
    for path in sorted(SAMPLE.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        repairer = Repairer(text, policy, warn=False)
        for n, m in enumerate(SENTENCE.finditer(text)):
            made = edit(m.group(), rng)
            if made is None or made[0] == m.group():
                continue
            result = repairer.repair(made[0])
            if result.alignment is None:
                continue
            yield {
                "score": result.alignment.score,
                "faithful": made[1],
                "group": f"{path.stem}:{n}",
            }


if __name__ == "__main__":
    for row in rows():
        print(json.dumps(row))

// The review page's keys. Plain script, no build step; it only talks to this site's API.
// Answers go to POST /v1/review/tasks/{key}/answers with the session's CSRF token; every
// text shown comes from the server's escaped HTML or is set with textContent.
"use strict";
(function () {
  const csrf = document.body.dataset.csrf;
  const task = document.getElementById("task");
  const queue = document.getElementById("queue");
  const started = Date.now();
  let keys = 0;
  let busy = false;

  const HELP = [
    ["a / y", "confirm the value (one candidate)"],
    ["1 … 9", "choose that candidate"],
    ["c", "correct: type the value, Enter saves, Esc cancels"],
    ["n", "the value is not in the document (a note, then Enter)"],
    ["u", "unsure"],
    ["j / k", "next / previous task"],
    ["z", "undo the answer just saved (a new answer supersedes it)"],
    ["+ / -", "zoom the page images in or out"],
    ["Enter", "open the selected task (queue)"],
    ["?", "show or hide these keys"],
  ];

  function toggleHelp() {
    const open = document.getElementById("help");
    if (open) {
      open.remove();
      return;
    }
    const box = document.createElement("div");
    box.id = "help";
    const title = document.createElement("b");
    title.textContent = "Keys";
    box.append(title);
    const list = document.createElement("table");
    for (const [k, what] of HELP) {
      const row = list.insertRow();
      const kbd = document.createElement("kbd");
      kbd.textContent = k;
      row.insertCell().append(kbd);
      row.insertCell().textContent = what;
    }
    box.append(list);
    document.body.append(box);
  }

  function say(message, bad) {
    const status = document.getElementById("status");
    if (status) {
      status.textContent = message;
      status.className = bad ? "problem" : "meta";
    }
  }

  // -- the queue ---------------------------------------------------------------------------
  function queueKeys(event) {
    const rows = Array.from(queue.querySelectorAll("tr[data-href]"));
    if (!rows.length) return false;
    let at = rows.findIndex((r) => r.classList.contains("sel"));
    if (event.key === "j" || event.key === "k") {
      if (at >= 0) rows[at].classList.remove("sel");
      at = event.key === "j" ? Math.min(at + 1, rows.length - 1) : Math.max(at - 1, 0);
      rows[at].classList.add("sel");
      rows[at].scrollIntoView({ block: "nearest" });
      return true;
    }
    if (event.key === "Enter" && at >= 0) {
      window.location.assign(rows[at].dataset.href);
      return true;
    }
    return false;
  }

  // -- one task ----------------------------------------------------------------------------
  function step(to, state, saved) {
    let url = task.dataset.step + "&to=" + to;
    if (state) url += "&state=" + encodeURIComponent(state);
    if (saved) url += "&saved=" + encodeURIComponent(saved);
    window.location.assign(url);
  }

  async function answer(body, taskKey, done) {
    if (busy) return;
    busy = true;
    say("saving…");
    const record = Object.assign(
      { codes_kept: [], reason_seen: true, keys: keys, ms: Date.now() - started },
      body
    );
    let response;
    try {
      response = await fetch("/v1/review/tasks/" + (taskKey || task.dataset.key) + "/answers", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(record),
      });
    } catch (error) {
      busy = false;
      say("not saved: " + error, true);
      return;
    }
    if (response.status === 201 && done) {
      done(await response.json());
      return;
    }
    if (response.status === 201) {
      const saved = await response.json();
      say("saved (" + saved.state + "); to the next open task…");
      step("next", "unanswered", task.dataset.key);
      return;
    }
    busy = false;
    let detail = response.statusText;
    try {
      detail = (await response.json()).detail || detail;
    } catch (error) {
      // not JSON: keep the status text
    }
    say("not saved (" + response.status + "): " + detail, true);
  }

  function correction() {
    const value = document.getElementById("correct-value").value.trim();
    if (!value) {
      say("type the value first", true);
      return;
    }
    const template = task.dataset.template ? JSON.parse(task.dataset.template) : {};
    // Only a candidate's members: the server refuses others, and names the proposer itself.
    const candidate = {};
    for (const name of ["unit", "key", "evidence", "search_region"]) {
      if (template[name] !== undefined) candidate[name] = template[name];
    }
    const field = document.getElementById("field").textContent;
    const slotKey = document.getElementById("slot-key");
    candidate.id = "review-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
    candidate.field = field;
    if (slotKey) candidate.key = slotKey.textContent;
    const number = Number(value.replace(/,/g, ""));
    candidate.value = typeof template.value === "number" && Number.isFinite(number) ? number : value;
    const unit = document.getElementById("correct-unit").value.trim();
    if (unit) candidate.unit = unit;
    else delete candidate.unit;
    // A qualified value (a range, "approximately", "at least"...) where the field takes one:
    // groundgate's answer format holds it as a correction whose value item quotes the
    // document's words (the admission locates them and reads the qualifier there).
    const qualifier = document.getElementById("correct-qualifier");
    if (qualifier && qualifier.value) {
      const quote = document.getElementById("correct-quote").value.trim();
      const to = document.getElementById("correct-to");
      if (to && !to.value.trim()) {
        say("a range: type its other end in 'to'", true);
        return;
      }
      const ends = [value].concat(to ? [to.value.trim()] : []);
      if (!quote || ends.some((end) => !quote.includes(end))) {
        say("quote the document's words that give " + ends.join(" and "), true);
        return;
      }
      candidate.evidence = { source: "document", role: "value", text: quote };
      delete candidate.search_region;
    }
    answer({ verdict: "correct", candidate: candidate });
  }

  function startNotInDocument() {
    const form = document.getElementById("nid-form");
    form.hidden = false;
    document.getElementById("nid-note").focus();
  }

  function notInDocument() {
    const note = document.getElementById("nid-note").value.trim();
    answer(note ? { verdict: "not_in_document", note: note } : { verdict: "not_in_document" });
  }

  function startCorrection() {
    const form = document.getElementById("correct-form");
    form.hidden = false;
    document.getElementById("correct-value").focus();
  }

  function choose(decision) {
    answer({ verdict: "choose", decision: Number(decision) });
  }

  function taskKeys(event) {
    const k = event.key;
    const choices = Number(task.dataset.choices);
    if (k === "a" || k === "y") {
      if (choices === 1) answer({ verdict: "confirm" });
      else say(choices ? "several candidates: press 1 to " + choices + " to choose one" : "no candidate to confirm: c corrects, n says it is not in the document", true);
      return true;
    }
    if (/^[1-9]$/.test(k) && Number(k) <= choices) {
      const item = document.querySelectorAll("#choices li")[Number(k) - 1];
      choose(item.dataset.decision);
      return true;
    }
    const actions = {
      c: startCorrection,
      n: startNotInDocument,
      u: () => answer({ verdict: "unsure" }),
      j: () => step("next", task.dataset.stateFilter),
      k: () => step("prev", task.dataset.stateFilter),
    };
    if (actions[k]) {
      actions[k]();
      return true;
    }
    return false;
  }

  // The undo of the answer just saved: a new answer that supersedes it (never an edit),
  // then that task again, to answer it anew.
  const undoButton = document.getElementById("undo");
  function undo() {
    const target = undoButton.dataset.task;
    answer(JSON.parse(undoButton.dataset.answer), target, () => {
      const params = new URLSearchParams(window.location.search);
      params.delete("saved");
      params.delete("end");
      params.delete("cursor");
      window.location.assign("/review/tasks/" + target + "?" + params.toString());
    });
  }
  if (undoButton) undoButton.addEventListener("click", undo);

  // The page images' zoom: the frames widen inside their scrolling pane.
  const pageImages = document.getElementById("page-images");
  const ZOOMS = [1, 1.5, 2, 3, 4];
  let zoomAt = 0;
  function zoom(by) {
    zoomAt = Math.max(0, Math.min(ZOOMS.length - 1, zoomAt + by));
    pageImages.style.setProperty("--zoom", String(ZOOMS[zoomAt]));
  }
  if (pageImages) {
    for (const button of pageImages.querySelectorAll("button[data-zoom]")) {
      button.addEventListener("click", () => zoom(Number(button.dataset.zoom)));
    }
  }

  if (task) {
    document.getElementById("correct-form").addEventListener("submit", (event) => {
      event.preventDefault();
      correction();
    });
    document.getElementById("nid-form").addEventListener("submit", (event) => {
      event.preventDefault();
      notInDocument();
    });
    for (const id of ["correct-form", "nid-form"]) {
      document.getElementById(id).addEventListener("keydown", (event) => {
        if (event.key === "Escape") {
          event.currentTarget.hidden = true;
          document.activeElement.blur();
        }
      });
    }
    for (const button of document.querySelectorAll(".controls button[data-verdict]")) {
      button.addEventListener("click", () => {
        const verdict = button.dataset.verdict;
        if (verdict === "correct") startCorrection();
        else if (verdict === "choose") choose(button.dataset.decision);
        else if (verdict === "not_in_document") startNotInDocument();
        else answer({ verdict: verdict });
      });
    }
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && ["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(target.tagName)) {
      if (target.tagName !== "BUTTON") return; // typing: keys are text
    }
    keys += 1;
    let done = false;
    if (event.key === "?") {
      toggleHelp();
      done = true;
    } else if ((event.key === "+" || event.key === "-") && pageImages) {
      zoom(event.key === "+" ? 1 : -1);
      done = true;
    } else if (event.key === "z" && undoButton) {
      undo();
      done = true;
    } else if (task) done = taskKeys(event);
    else if (queue) done = queueKeys(event);
    if (done) event.preventDefault();
  });
})();

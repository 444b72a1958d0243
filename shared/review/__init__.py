"""The review step: people settle what admission sends them (issue 15).

Four formats, as groundgate 0.11 defines them: ``review-policy@1`` (which slots get a task, and
how answers settle), ``task@1`` (one question about one slot of a packet), ``answer@1`` (what a
reviewer gives for a task) and ``resolution@1`` (the final state and value of each slot).

- ``formats``: the store keys of objects and the checks of policies and answers;
- ``packets``: a packet (document, schema, candidates, ...) with its receipt and packet key;
- ``tasks``: the tasks of a packet under a review policy;
- ``resolve``: the resolution of a packet from the answers;
- ``measures``: answers, time, agreement and the escapes the audit finds.

Everything here is pure and synchronous; the CLI (``groundswell review``) wires files to it.
"""

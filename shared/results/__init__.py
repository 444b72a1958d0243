"""The read side of runs: pages of a run's receipts, one document's receipts, diffs.

Readers (the report, review, exports, gates, the API and the CLI) use it; it reads what a
run wrote and never imports the execution side (``runs/`` beyond its records), and the
execution side never imports a reader.
"""

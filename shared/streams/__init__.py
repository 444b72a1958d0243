"""Streams: documents that arrive as notifications, gathered into windows that finish as runs.

A corpus is a source of records (DESIGN.md, "Where the next capabilities go"); a stream is a
source that has no end: S3 event notifications delivered through SQS, or a signed webhook,
each naming objects that were written. A window gathers them (by count or by time), and each
closed window is planned and finalized as a run of its own, so receipts, reuse, summaries,
review and the ledger work on it as on any run.

File names, as in every domain: ``models.py`` (a notification, a window, a stream's
settings), ``store.py`` (a window's state in Redis, rebuildable from storage), ``service.py``
(notifications into windows, a closed window into a run); the webhook's endpoint is
``api/routes/streams.py`` and the SQS consumer a task in ``workers/``. It builds on ``runs``
(to submit a window's run), ``formats`` and ``corpus`` (what a notified object holds),
``storage`` and ``settings``; nothing of the core imports it.
"""

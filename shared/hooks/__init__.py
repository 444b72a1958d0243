"""Run hooks (issue 34): webhooks on a run's state changes, signed, retried, recorded.

- ``models``: a hook (where, which events, which body) and a delivery (its status);
- ``signing``: HMAC-SHA256 over ``<timestamp>.<body>``, and its check for receivers;
- ``service``: the deliveries a finished run makes, and one attempt at one of them.

docs/hooks.md is the reference a receiver reads.
"""

"""OpenLineage (issue 34): a run's START, COMPLETE and FAIL events, for Marquez or DataHub.

``service`` builds the events (openlineage-python's classes) and emits them through the
transport ``GROUNDSWELL_OPENLINEAGE_URL`` names: ``http(s)://...`` (an OpenLineage HTTP
endpoint) or ``file:///path/events`` (the file transport). Nothing here is imported, and
no task is sent, while it is unset. docs/lineage.md.
"""

"""The unit kinds, one module each: ``read``, ``verify``, ``admit`` and ``ledger``.

Each module declares its kind (:class:`~groundswell.shared.runs.kinds.Kind`: its queue, its
planning rule, its executor, what it leaves in the index) and registers it; the run machinery
(``groundswell.shared.runs``) names no kind and loads these by name. A kind from outside the
package is a module of the same shape named in ``GROUNDSWELL_KINDS_EXTRA``.
"""

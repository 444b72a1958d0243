"""groundswell's core: pure, synchronous, framework-free.

Everything else (Celery tasks, the API, the CLI) wires arguments to the modules here.
"""

__version__ = "0.1.0"

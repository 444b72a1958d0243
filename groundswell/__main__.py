"""``python -m groundswell``: the command line."""

from groundswell.shared.cli import main

main()

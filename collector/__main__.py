"""``python -m infersight.collector`` and the ``infersight`` command.

A light module on purpose: the decode workers are spawned processes, and a spawned process
imports its parent's main module again. Run as a package's ``__main__`` nothing is imported
again; run as the ``infersight`` script, the script imports only this. The command line's
modules (the judges, the alert rules, the report) load in the parent alone.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the ``infersight`` command line."""
    from ._cli import main as cli

    sys.exit(cli())


if __name__ == "__main__":
    main()

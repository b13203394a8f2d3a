"""The store's DDL, kept as ``.sql`` files in ``collector/sql`` and applied in name order."""

from __future__ import annotations

from importlib import resources


def statements() -> list[str]:
    """Every DDL statement, in the order it must run. Idempotent (``IF NOT EXISTS``)."""
    folder = resources.files("infersight.collector") / "sql"
    out: list[str] = []
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".sql"):
            continue
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("--")
        )
        out.extend(s.strip() for s in text.split(";\n") if s.strip().rstrip(";"))
    return [s.rstrip(";") for s in out]

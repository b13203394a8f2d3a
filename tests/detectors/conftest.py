"""Shows the detectors' precision/recall report in pytest's summary, with or without ``-s``."""

from __future__ import annotations

from typing import Any

_SECTIONS: list[tuple[str, str]] = []


def add_report_section(title: str, text: str) -> None:
    """Print ``text`` under ``title`` at the end of the run (pytest captures plain prints)."""
    _SECTIONS.append((title, text))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for title, text in _SECTIONS:
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)

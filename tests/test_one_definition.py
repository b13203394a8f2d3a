"""Each "one X" of ARCHITECTURE.md's invariants has one definition, and no module writes its own.

Read from the package sources (Python, SQL and templates): a second way of writing money, a
row's time, a call's kind, a percentile or stored messages would let two surfaces show two
answers to one question, which is what these definitions exist to prevent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infersight import detectors
from infersight.collector import store

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sdk", "collector", "detectors", "judges", "dashboards")


def _sources(*suffixes: str) -> dict[str, str]:
    return {
        path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
        for folder in PACKAGES
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in suffixes
    }


def _hits(pattern: str, *suffixes: str, allowed: tuple[str, ...] = ()) -> list[str]:
    regex = re.compile(pattern)
    return [
        f"{name}:{number}: {line.strip()}"
        for name, text in _sources(*suffixes).items()
        if name not in allowed
        for number, line in enumerate(text.splitlines(), 1)
        if regex.search(line)
    ]


# --- money text: detectors/_money_text.py ------------------------------------------------------


def test_money_is_written_by_usd_text_alone():
    # "$" before a formatted value, or a format spec applied to a money-named value.
    dollar = r"\$\{(?!name\})|\$%|\"\$\""
    spec = r"\{[^{}]*(usd|cost|spend|price|dollar)[^{}]*:[,.0-9]*[fgde%]\}"
    assert _hits(dollar, ".py", ".html", allowed=("detectors/_money_text.py",)) == []
    assert _hits(spec, ".py", ".html") == []


def test_the_store_serves_the_same_money_text():
    assert store.usd_text is detectors.usd_text


@pytest.mark.parametrize(("value", "text"), [
    (1234.5, "$1,234.50"), (4.8, "$4.80"), (0.5, "$0.5000"), (0.0088668, "$0.00887"), (0.000012, "$0.0000120"),
    (0.0, "$0"), (None, "–"),
])
def test_usd_text_rounds_once_to_cents_or_three_significant_digits(value, text):
    assert detectors.usd_text(value) == text


# --- row time text: detectors/_row_time.py -----------------------------------------------------


def test_a_rows_time_is_written_by_row_time_text_alone():
    assert _hits(r"010d|:09d\}", ".py", allowed=("detectors/_row_time.py",)) == []


@pytest.mark.parametrize("unix_ns", [0, 1, 1_700_000_000_123_456_789, 2**63 - 1])
def test_row_time_text_reads_back_exactly(unix_ns):
    text = detectors.row_time_text(unix_ns)
    assert detectors.row_time_ns(text) == unix_ns
    assert detectors.row_time_day(text) == unix_ns // (86_400 * 10**9)


def test_a_time_past_what_int64_holds_is_clamped_not_refused():
    # A span may claim any 64-bit time; DateTime64(9) holds none past 2262-04-11.
    assert detectors.row_time_text(2**64 - 1) == detectors.row_time_text(2**63 - 1) == "9223372036.854775807"


# --- kinds: collector/store/_kinds.py ----------------------------------------------------------


def test_every_kind_written_in_sql_is_one_of_the_kinds():
    written = {
        match.group(1)
        for text in _sources(".py", ".sql").values()
        for match in re.finditer(r"\bkind\s*(?:=|!=)\s*'(\w+)'", text)
    }
    assert written <= set(store.KINDS)


# --- latency percentiles: collector/store/_histogram.py ----------------------------------------


def test_no_surface_asks_clickhouse_for_a_quantile_of_its_own():
    # ClickHouse's quantile functions interpolate or sample; every percentile shown is the
    # nearest rank in the one histogram, so a p95 is the same number on every surface. (The
    # detectors' drift statistics are quantiles of samples in numpy, not figures on a surface.)
    surfaces = [
        hit for hit in _hits(r"(?<![.\w])quantiles?\w*\(", ".py", ".sql", allowed=("collector/store/_histogram.py",))
        if not hit.startswith("detectors/")
    ]
    assert surfaces == []


# --- stored messages: detectors/_messages.py ---------------------------------------------------


def test_stored_messages_are_parsed_by_parse_messages_alone():
    assert _hits(r"(json|orjson)\.loads\([^)]*messages", ".py", allowed=("detectors/_messages.py",)) == []

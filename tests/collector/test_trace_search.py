"""Text search over prompts and outputs finds exactly the traces a plain scan of every span finds,
on both store backends, page after page, with the same total on every page."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from infersight.collector.store import ClickHouseStore, Store, TraceSearch, encode_rows, find_traces
from infersight.detectors import row_time_text
from infersight.sdk import semconv

NS = 1_000_000_000
HOUR_NS = 3600 * NS

# (prompt, output) per trace; None leaves the attribute out. Case, accents, non-ASCII case pairs,
# LIKE's and JSON's special characters, line breaks, a term only in the prompt or only the output.
TEXTS: list[tuple[str | None, str | None]] = [
    ("Please REFUND order #4242 today", "Your refund is on its way."),
    ("refund order 4242", None),
    (None, "We issued the Refund for ORDER 4242."),
    ("Refünd Ordér für Müller", "ÜBER die Straße"),
    ("naïve CAFÉ au lait", "café crème"),
    ("100% sure that a_b is not a%b", "back\\slash and \"quoted\" words"),
    ("line one\nline two", "tab\there"),
    ("emoji 🙂 inside", "ΣΊΣΥΦΟΣ σίσυφος"),
    ("only-in-the-prompt marker", "plain answer"),
    ("plain question", "only-in-the-output marker"),
    ("", ""),
]
QUERIES = [
    "refund", "REFUND", "Refund Order", "fund ord", "order 4242", "#4242", "4242", "refund order 4242",
    "ünd", "ÜND", "MÜLLER", "straße", "STRASSE", "café", "CAFÉ", "É", "naïve", "%", "a%b", "_", "a_b",
    "\\", "\"quoted\"", "line one\nline", "\t", "🙂", "σίσυφος", "ΣΊΣΥΦΟΣ", "only-in-the-prompt",
    "only-in-the-output", "marker", "absent everywhere", "\"role\"", "[", " ",
]


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request: pytest.FixtureRequest, store: Store) -> Store:
    if request.param == "chdb":
        return store
    server = ClickHouseStore(f"http://default:@{request.getfixturevalue('clickhouse_http')[len('http://'):]}/search")
    request.addfinalizer(server.close)
    return server


def span(project: str, trace: int, span_no: int, at_ns: int, attrs: dict[str, str], *, service: str = "app",
         name: str = "chat") -> dict[str, Any]:
    return {"Timestamp": row_time_text(at_ns), "TraceId": f"{trace:032x}", "SpanId": f"{trace:08x}{span_no:08x}",
            "ParentSpanId": "", "TraceState": "", "SpanName": name, "SpanKind": "Client", "ServiceName": service,
            "ResourceAttributes": {semconv.PROJECT: project}, "ScopeName": "s", "ScopeVersion": "",
            "SpanAttributes": attrs, "Duration": NS, "StatusCode": "Unset", "StatusMessage": ""}


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def content_span(project: str, trace: int, at_ns: int, prompt: str | None, output: str | None) -> dict[str, Any]:
    attrs = {semconv.OPERATION: "chat", "gen_ai.request.model": "m"}
    if prompt is not None:
        attrs["gen_ai.input.messages"] = messages("user", prompt)
    if output is not None:
        attrs["gen_ai.output.messages"] = messages("assistant", output)
    return span(project, trace, 1, at_ns, attrs)


def plain_scan(store: Store, project: str, start_ns: int, end_ns: int, text: str) -> set[str]:
    """The traces with a GenAI span in the window whose prompt or output holds ``text``, read by
    decompressing every span's attributes: the search as it was before any shortcut."""
    rows = store.query(
        "SELECT DISTINCT TraceId AS trace_id FROM otel_traces"
        " WHERE ResourceAttributes['infersight.project'] = {project:String}"
        " AND Timestamp >= fromUnixTimestamp64Nano({start:Int64}) AND Timestamp < fromUnixTimestamp64Nano({end:Int64})"
        " AND (positionCaseInsensitiveUTF8(SpanAttributes['gen_ai.input.messages'], {text:String}) > 0"
        " OR positionCaseInsensitiveUTF8(SpanAttributes['gen_ai.output.messages'], {text:String}) > 0)"
        " AND TraceId IN (SELECT trace_id FROM llm_spans WHERE project = {project:String})",
        {"project": project, "start": start_ns, "end": end_ns, "text": text},
    )
    return {row["trace_id"] for row in rows}


def every_page(store: Store, project: str, search: TraceSearch, limit: int) -> tuple[list[str], set[int]]:
    """The trace ids of every page in order, and the totals the pages reported."""
    ids: list[str] = []
    totals: set[int] = set()
    cursor = None
    while True:
        page = find_traces(store, project, search, cursor=cursor, limit=limit)
        ids += [trace["trace_id"] for trace in page["traces"]]
        totals.add(page["total"])
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, totals


def test_text_search_finds_exactly_what_a_plain_scan_finds(backend: Store) -> None:
    project, now = f"search-{uuid.uuid4().hex[:8]}", time.time_ns()
    rows = [content_span(project, i + 1, now - (i + 1) * HOUR_NS, prompt, output)
            for i, (prompt, output) in enumerate(TEXTS)]
    # The same texts outside the window and in another project must not be found; spans without
    # content (retrieval steps) share a trace with content and fill granules of their own.
    rows += [content_span(project, 100 + i, now - 30 * 86400 * NS, prompt, output)
             for i, (prompt, output) in enumerate(TEXTS)]
    rows += [content_span(f"{project}-other", 200 + i, now - HOUR_NS, p, o) for i, (p, o) in enumerate(TEXTS)]
    rows += [span(project, 1, 2, now - HOUR_NS, {semconv.OPERATION: "retrieval", "db.query.text": "refund"},
                  name="retrieval")]
    backend.insert("otel_traces", encode_rows(rows))
    search_window = (now - 7 * 86400 * NS, now)

    found: dict[str, set[str]] = {}
    for text in QUERIES:
        search = TraceSearch(*search_window, text=text)
        expected = plain_scan(backend, project, *search_window, text)
        ids, totals = every_page(backend, project, search, limit=2)
        assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids)), text
        assert totals == {len(expected)}, text
        found[text] = {trace[-2:] for trace in ids}

    # What a user relies on, spelled out (trace numbers in hex): case and accents fold, a term is
    # found in the prompt or the output alone, special characters are text, not patterns.
    assert found["REFUND"] == found["refund"] == {"01", "02", "03"}
    assert found["refund order 4242"] == {"02"} and found["order 4242"] == {"02", "03"}
    assert found["ÜND"] == found["ünd"] == {"04"} and found["CAFÉ"] == found["café"] == {"05"}
    assert found["ΣΊΣΥΦΟΣ"] == found["σίσυφος"] == {"08"}
    assert found["only-in-the-prompt"] == {"09"} and found["only-in-the-output"] == {"0a"}
    assert found["%"] == found["a%b"] == {"06"} and found["_"] >= {"06"} and found["a_b"] == {"06"}
    assert found["absent everywhere"] == set()


def test_a_lone_match_among_many_spans_without_content_is_found(store: Store) -> None:
    """Granules of spans without a prompt or output are skipped by their attribute keys; the one
    span with content among 20,000 such spans still has to be read and found."""
    project, now = f"search-{uuid.uuid4().hex[:8]}", time.time_ns()
    filler = [span(project, 1000 + i, 1, now - HOUR_NS - i * NS, {semconv.OPERATION: "retrieval"}, name="chat")
              for i in range(20_000)]
    filler.insert(12_345, content_span(project, 7, now - 2 * HOUR_NS, "needle in the haystack", None))
    store.insert("otel_traces", encode_rows(filler))
    page = find_traces(store, project, TraceSearch(now - 86400 * NS, now, text="NEEDLE"))
    assert [trace["trace_id"] for trace in page["traces"]] == [f"{7:032x}"] and page["total"] == 1


def test_a_page_after_the_last_trace_is_gone_still_counts_what_matches(store: Store) -> None:
    project, now = f"search-{uuid.uuid4().hex[:8]}", time.time_ns()
    store.insert("otel_traces", encode_rows([
        content_span(project, 1, now - HOUR_NS, "refund please", None),
        content_span(project, 2, now - 2 * HOUR_NS, "refund again", None),
    ]))
    search = TraceSearch(now - 86400 * NS, now, text="refund")
    first = find_traces(store, project, search, limit=1)
    assert first["total"] == 2 and first["next_cursor"]
    store.query("DELETE FROM llm_spans WHERE project = {p:String} AND trace_id = {t:String}",
                {"p": project, "t": f"{2:032x}"})
    second = find_traces(store, project, search, cursor=first["next_cursor"], limit=1)
    assert second["traces"] == [] and second["total"] == 1 and second["next_cursor"] is None

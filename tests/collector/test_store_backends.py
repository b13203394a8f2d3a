"""One conformance suite over both store backends: the embedded chDB store, and a ClickHouse
server reached through clickhouse-connect. No ClickHouse server package can be installed here,
so the server is `tests/collector/clickhouse_http.py`: the ClickHouse HTTP interface in front of
chDB (the real engine and formats; only the HTTP framing is the test's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector import StoreError, encode_rows
from infersight.collector._server import CollectorProcess
from infersight.collector.ingest._otlp import JSON, parse_traces, to_rows
from infersight.collector.store import ClickHouseStore, cluster_statements, held_spans
from infersight.collector.store._id_lists import id_array
from infersight.detectors import row_time_ns, row_time_text
from tests.collector.clickhouse_http import MAX_PARAMETER_BYTES
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import LEAN_COLLECTOR, SERVER_TIMEZONE, free_port, start_clickhouse_http, wait_for_spans

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request, store, server_stores):
    return store if request.param == "chdb" else server_stores("conformance")


def project_rows(count: int):
    project = f"conf-{uuid.uuid4().hex[:8]}"
    body, span_ids = genai_spans_json(count)
    return project, encode_rows(to_rows(parse_traces(body, JSON), project)), span_ids


def test_rows_reach_llm_spans_through_the_view(backend):
    project, rows, span_ids = project_rows(5)
    backend.insert("otel_traces", rows)
    got = backend.query(
        "SELECT span_id, operation, input_tokens FROM llm_spans WHERE project = {p:String} ORDER BY span_id",
        {"p": project},
    )
    assert [r["span_id"] for r in got] == sorted(span_ids)
    assert all(r["operation"] == "chat" and r["input_tokens"] > 0 for r in got)


def test_a_repeated_insert_with_the_same_token_is_stored_once(backend):
    project, rows, _span_ids = project_rows(3)
    token = uuid.uuid4().hex
    backend.insert("otel_traces", rows, dedup_token=token)
    backend.insert("otel_traces", rows, dedup_token=token)
    for table, column in (("otel_traces", "ResourceAttributes['infersight.project']"), ("llm_spans", "project")):
        (row,) = backend.query(f"SELECT count() AS n FROM {table} WHERE {column} = {{p:String}}", {"p": project})
        assert row["n"] == 3, table


def test_values_are_bound_never_spliced(backend):
    _project, rows, _ = project_rows(1)
    backend.insert("otel_traces", rows)
    hostile = "x' OR 1=1 --"
    assert backend.query("SELECT count() AS n FROM llm_spans WHERE project = {p:String}", {"p": hostile}) == [{"n": 0}]
    (row,) = backend.query("SELECT {s:String} AS echoed", {"s": hostile})
    assert row["echoed"] == hostile


@pytest.mark.parametrize("token", [None, "ab12"])
def test_rows_the_store_refuses_raise_a_permanent_error_and_nothing_lands(backend, token):
    # ClickHouse refuses an insert into more than 100 partitions (otel_traces has one a day).
    # On chDB the streaming insert returns as if it had worked: the store must notice.
    project, rows, _ = project_rows(101)
    decoded = [json.loads(line) for line in rows.splitlines()]
    for day, row in enumerate(decoded):
        row["Timestamp"] = f"{1_700_000_000 + day * 86_400:010d}.000000000"
    with pytest.raises(StoreError) as refused:
        backend.insert("otel_traces", encode_rows(decoded), dedup_token=token and uuid.uuid4().hex)
    assert "partitions" in str(refused.value) and refused.value.transient is False
    with pytest.raises(StoreError) as unparsable:
        backend.insert("otel_traces", b'{"Timestamp": "yesterday"}\n', dedup_token=token and uuid.uuid4().hex)
    assert unparsable.value.transient is False
    assert backend.query("SELECT count() AS n FROM llm_spans WHERE project = {p:String}", {"p": project}) == [{"n": 0}]


def test_array_parameters_are_lists_and_reach_clickhouse_intact(backend):
    # Lists, not pre-formatted text: clickhouse-connect formats a list itself and quoted a
    # pre-formatted literal a second time (CANNOT_PARSE_QUOTED_STRING on every dashboard).
    values = ["plain", "it's", "back\\slash", "a]b,c", "", "ünï©ødé", "x' OR '1'='1"]
    for given in (values, tuple(values)):
        (row,) = backend.query("SELECT {a:Array(String)} AS a, length({a:Array(String)}) AS n", {"a": given})
        assert (row["a"], row["n"]) == (values, len(values))
    assert backend.query("SELECT length({a:Array(String)}) AS n", {"a": []}) == [{"n": 0}]
    (row,) = backend.query("SELECT {n:Array(UInt32)} AS n, {f:Array(Float64)} AS f", {"n": [1, 2], "f": [0.5]})
    assert (row["n"], row["f"]) == ([1, 2], [0.5])


def test_a_server_database_gets_the_schema_when_new_damaged_or_older_and_only_then(clickhouse_http):
    url = f"http://default:@{clickhouse_http[len('http://'):]}/schema_{uuid.uuid4().hex[:8]}"

    def applied() -> list[dict]:
        return store.query("SELECT fingerprint, tables FROM schema_applied ORDER BY at")

    store = ClickHouseStore(url)
    tables = {r["name"] for r in store.query("SELECT name FROM system.tables WHERE database = currentDatabase()")}
    assert {"otel_traces", "llm_spans", "feedback", "alerts"} <= tables
    assert len(applied()) == 1
    ClickHouseStore(url).close()
    assert len(applied()) == 1  # current: not applied again
    store.query("DROP TABLE feedback")
    ClickHouseStore(url).close()  # a table gone since: the count differs, applied again
    assert len(applied()) == 2 and store.query("EXISTS TABLE feedback") == [{"result": 1}]
    store.query("INSERT INTO schema_applied (fingerprint, tables) VALUES ('an-older-schema', {n:UInt64})",
                {"n": applied()[-1]["tables"]})
    ClickHouseStore(url).close()
    assert len(applied()) == 4 and applied()[-1]["fingerprint"] == applied()[0]["fingerprint"]
    store.close()


def test_errors_are_store_errors(backend):
    with pytest.raises(StoreError):
        backend.query("SELECT no_such_column FROM llm_spans")


def test_collector_on_a_clickhouse_server_end_to_end(tmp_path, clickhouse_http):
    url = f"http://default:@{clickhouse_http[len('http://'):]}/e2e_{uuid.uuid4().hex[:6]}"
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(
        "--no-auth", *LEAN_COLLECTOR, "--clickhouse-url", url)).start()
    try:
        sdk.init(service_name="svc", endpoint=process.url,
                 tracer_provider=TracerProvider(resource=Resource.create({"service.name": "svc"})))

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def ask(i):
            return {"usage": {"prompt_tokens": i, "completion_tokens": 1}}

        for i in range(1, 11):
            ask(i)
        sdk.force_flush(10_000)
        sdk.shutdown()
        summary = wait_for_spans(process.url, 10)
        assert (summary["spans"], summary["input_tokens"]) == (10, 55)
        assert not (tmp_path / "d" / "clickhouse").exists()  # nothing went to an embedded store
    finally:
        process.stop()


def test_cluster_schema_is_replicated_with_distributed_tables_under_the_same_names():
    ddl = cluster_statements("prod", "infersight")
    text = "\n".join(ddl)
    assert "CREATE TABLE IF NOT EXISTS otel_traces_local ON CLUSTER prod (" in text
    assert ("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/infersight/otel_traces_local',"
            " '{replica}')") in text
    assert ("CREATE TABLE IF NOT EXISTS otel_traces ON CLUSTER prod AS otel_traces_local"
            " ENGINE = Distributed(prod, infersight, otel_traces_local, rand())") in ddl
    assert ("ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/infersight/alerts_local',"
            " '{replica}', updated_at)") in text
    view = next(s for s in ddl if s.startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS llm_spans_mv_v4"))
    assert "ON CLUSTER prod TO llm_spans_local" in view and "FROM otel_traces_local" in view
    # The rollups read llm_spans' rows under its own name (their money conditions are qualified).
    rollup = next(s for s in ddl if s.startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS llm_hourly_mv_v3"))
    assert "FROM llm_spans_local AS llm_spans" in rollup and "llm_spans.usage_estimated" in rollup
    # every table the app reads or writes exists under its own name
    for table in ("otel_traces", "llm_spans", "detections", "queue_depth", "alerts", "alert_events"):
        assert any(s.startswith(f"CREATE TABLE IF NOT EXISTS {table} ON CLUSTER prod AS") for s in ddl), table


def test_text_values_arrive_exactly_as_given(backend):
    # ClickHouse reads parameter text with TSV escaping; the store must escape for its callers.
    for value in ("a\tb", "a\\tb", "\\N", "back\\slash", "line\nbreak", "quote'd"):
        (row,) = backend.query("SELECT {v:String} AS echoed, isNull({v:Nullable(String)}) AS null", {"v": value})
        assert (row["echoed"], row["null"]) == (value, 0), value


def test_query_rows_come_back_whole_and_exact(backend):
    # Rows are read as one document: a newline inside a value must not split a row, and numbers
    # keep their exact value (64-bit integers as ClickHouse sends them, quoted).
    rows = backend.query(
        "SELECT number AS n, concat('a\\n', toString(number), 'é') AS text, toUInt64(18446744073709551615) AS big,"
        " 0.1 + number AS x FROM numbers(3) ORDER BY n")
    assert [(int(r["n"]), r["text"], int(r["big"]), r["x"]) for r in rows] == [
        (i, f"a\n{i}\u00e9", 2**64 - 1, 0.1 + i) for i in range(3)]
    assert backend.query("SELECT 1 AS one WHERE 0") == []


def _starts(rows: bytes) -> dict[str, int]:
    """Each row's SpanId and its Timestamp, Unix nanoseconds."""
    return {row["SpanId"]: row_time_ns(row["Timestamp"]) for row in map(json.loads, rows.splitlines())}


def test_held_spans_finds_the_stored_ones_in_the_project_and_time_range(backend):
    project, rows, span_ids = project_rows(3)
    backend.insert("otel_traces", rows)
    (trace_id,) = {json.loads(line)["TraceId"] for line in rows.splitlines()}
    start = _starts(rows)
    asked = [(project, trace_id, span_id) for span_id in span_ids] + [(project, trace_id, "f" * 16), None]
    times = [start[span_id] for span_id in span_ids] + [time.time_ns(), 0]
    assert held_spans(backend, asked, times) == set(asked[:3])
    assert held_spans(backend, [("elsewhere", trace_id, span_ids[0])], times[:1]) == set()
    assert held_spans(backend, asked, [t - 3600 * 10**9 for t in times]) == set()  # started an hour before


def test_held_spans_finds_the_stored_ones_of_a_batch_spread_over_hours(backend):
    # A batch's spans may start hours apart (an agent session's root span ends, and is sent, with
    # the spans of this minute): each is found where it is, whatever time group it is looked up in.
    project, rows, _ = project_rows(12)
    lines = [json.loads(line) for line in rows.splitlines()]
    for hours, row in enumerate(lines):  # 0 to 11 hours back: more groups than a batch is split into
        row["Timestamp"] = row_time_text(row_time_ns(row["Timestamp"]) - hours * 3600 * 10**9)
    stored = encode_rows(lines)
    backend.insert("otel_traces", stored)
    start = _starts(stored)
    asked = [(project, row["TraceId"], row["SpanId"]) for row in lines]
    unknown = [(project, trace_id, "f" * 16) for _, trace_id, _ in asked]
    times = [start[span_id] for _, _, span_id in asked]
    assert held_spans(backend, asked + unknown + [None], times + times + [0]) == set(asked)
    assert held_spans(backend, asked[::-1], times[::-1]) == set(asked)  # in any order


def test_held_spans_asked_for_a_whole_request_of_traces_answers(backend):
    """512 spans of 512 traces (one OTLP request of the SDK's): the trace ids pass 4 KB, which
    clickhouse-connect sends as a multipart form instead of the URL, as a server accepts them."""
    project, rows, span_ids = project_rows(3)
    backend.insert("otel_traces", rows)
    (trace_id,) = {json.loads(line)["TraceId"] for line in rows.splitlines()}
    start = _starts(rows)
    asked = [(project, trace_id, span_id) for span_id in span_ids]
    times = [start[span_id] for span_id in span_ids]
    asked += [(project, f"{i:032x}", f"{i:016x}") for i in range(1, 510)]
    assert held_spans(backend, asked, times + [time.time_ns()] * 509) == set(asked[:3])


def test_held_spans_asked_for_a_writers_whole_batch_of_traces_answers_in_one_query(backend, monkeypatch):
    """20,000 spans of as many traces (a writer's largest batch): the ids pass what a server takes
    in one query parameter (128 KiB, which the test endpoint holds to as a server does), and the
    lookup still reads the time range once."""
    project, rows, span_ids = project_rows(3)
    backend.insert("otel_traces", rows)
    (trace_id,) = {json.loads(line)["TraceId"] for line in rows.splitlines()}
    start = _starts(rows)
    asked = [(project, trace_id, span_id) for span_id in span_ids]
    asked += [(project, f"{i:032x}", f"{i:016x}") for i in range(1, 20_000 - 2)]
    times = [start[span_id] for span_id in span_ids] + [time.time_ns()] * (len(asked) - 3)
    queries = []
    real_query = backend.query
    monkeypatch.setattr(backend, "query", lambda sql, params=None: queries.append(params) or real_query(sql, params))
    assert held_spans(backend, asked, times) == set(asked[:3])
    (params,) = queries
    traces = [value for name, value in params.items() if name.startswith("traces")]
    assert all(len(value.encode()) <= MAX_PARAMETER_BYTES for value in traces)


def test_a_long_list_of_ids_reaches_a_query_whole_and_in_order(backend):
    ids = [f"{i:032x}" for i in range(10_000, 0, -1)]  # 330 KB: three parameters of a server's 128 KiB
    expr, params = id_array("ids", ids)
    assert len(params) == 3
    (row,) = backend.query(f"SELECT {expr} AS ids", params)
    assert row["ids"] == ids
    empty, params = id_array("ids", [])
    (row,) = backend.query(f"SELECT count() AS n FROM system.one WHERE 'x' IN (SELECT arrayJoin({empty}))", params)
    assert row["n"] == 0


# 13:00 UTC of Dec 6 as text, and 02:30 UTC of Dec 7 (still Dec 6 in New York) in nanoseconds.
_ZONE_SQL = ("SELECT toUnixTimestamp(toDateTime({t:String})) AS at,"
             " toString(toDate(fromUnixTimestamp64Nano({ns:Int64}))) AS day")
_ZONE_PARAMS = {"t": "2026-12-06 13:00:00", "ns": 1_796_610_600 * 10**9}
_UTC_ANSWER = [{"at": 1_796_562_000, "day": "2026-12-07"}]


def test_times_are_read_and_bucketed_in_utc_on_a_server_of_another_zone(backend):
    # The test server runs in SERVER_TIMEZONE (tests/conftest.py), as a server may be configured.
    assert backend.query(_ZONE_SQL, _ZONE_PARAMS) == _UTC_ANSWER


def test_a_day_of_a_stored_time_stays_utc_after_a_server_of_another_zone_restarts(tmp_path):
    # A server opens tables from disk in its own zone: there, toDate() of a column gives the
    # server's day even in a UTC session (a table created in that session reads in UTC until then).
    from infersight.judges import judge_spend

    call = {"project": "p", "ts": f"{_ZONE_PARAMS['ns'] // 10**9}.000", "judge_model": "m", "purpose": "sample",
            "outcome": "ok", "attempts": 1, "cost_usd": 0.5}
    days = []
    for step in ("store", "read after a restart"):
        url, server = start_clickhouse_http(tmp_path / "server")
        store = ClickHouseStore(url.replace("http://", "http://default:@") + "/zones")
        try:
            if step == "store":
                store.insert("judge_calls", json.dumps(call).encode() + b"\n")
            days.append([(row["day"], row["usd"]) for row in judge_spend(store, "p", 0)])
        finally:
            store.close()
            server.terminate()
            server.wait(10)
    assert days == [[(_UTC_ANSWER[0]["day"], 0.5)]] * 2


def test_the_embedded_store_reads_and_buckets_in_utc_on_a_machine_of_another_zone(tmp_path):
    # chDB takes its zone from TZ when it starts, and the columns of tables it opens from disk keep
    # that zone: each step in a process of its own, the second opening what the first stored.
    stamp = f"{_ZONE_PARAMS['ns'] // 10**9}.000000000"
    row = json.dumps({"Timestamp": stamp, "TraceId": "ab" * 16, "SpanId": "cd" * 8})
    code = ("import json, sys; from infersight.collector import ChdbStore; store = ChdbStore(sys.argv[1]);"
            "sys.argv[4] and store.insert('otel_traces', sys.argv[4].encode() + b'\\n');"
            "print(json.dumps(store.query(sys.argv[2], json.loads(sys.argv[3]))))")
    sql = _ZONE_SQL + ", (SELECT toString(toDate(Timestamp)) FROM otel_traces) AS stored"
    for insert in (row, ""):
        args = [str(tmp_path / "store"), sql, json.dumps(_ZONE_PARAMS), insert]
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "TZ": SERVER_TIMEZONE})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [{**_UTC_ANSWER[0], "stored": "2026-12-07"}]

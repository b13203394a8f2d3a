"""What decoding OTLP in ClickHouse itself would save: a probe for ingest at 20,000 spans/s with content.

    .venv/bin/python bench/native_decode.py                 # 20 requests of 512 spans with content
    .venv/bin/python bench/native_decode.py --requests 40 --rounds 5
    .venv/bin/python bench/native_decode.py --product-schema   # into the collector's otel_traces and its views

The collector decodes OTLP protobuf into rows in Python (``decode_request``: ~35-50 µs a span
with content) and chDB parses the rows again as JSONEachRow. ClickHouse can read protobuf
itself (``FORMAT Protobuf`` with a schema) and flatten the request's nested spans with
``ARRAY JOIN``. This script times both on the same batch into the same plain MergeTree table (no
views, no indexes: the parse and the write alone), or with ``--product-schema`` into the
collector's own ``otel_traces`` with its indexes and views (one ``ChdbStore``, each side a project
of its own), in one process, in turns, CPU time of the process (chDB's threads included) per span:

- **Python**: ``decode_request`` for each request, then one ``INSERT ... FORMAT JSONEachRow`` of
  all the rows, as the writer batches them (``ChdbStore.insert`` with ``--product-schema``);
- **ClickHouse**: the requests, length-delimited, read by ``file(..., 'Protobuf')`` with a
  minimal OTLP schema written here (scalar attribute values only), one ``INSERT ... SELECT``
  that stamps the project as the collector does.

Each round gives the spans new trace ids, so the store's deduplication window drops nothing.

It is a probe, not the product: the ClickHouse side does none of what the Python side does
besides decoding (no validation per span, no canonical attribute names for other
instrumentations, no pairing of nested calls, no prices, no events, links or array values). It
shows what that decoding and parsing costs, not what a collector built on it would.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
from pathlib import Path

import lz4.frame
from chdb import session

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import _fresh_ids, build_body  # the ingest benchmark's own bodies

from infersight.collector import ChdbStore
from infersight.collector.ingest import decode_request

# The OTLP messages and fields the probe reads, with OTLP's field numbers (opentelemetry-proto,
# trace/v1 and common/v1); fields not named here are skipped by ClickHouse's reader.
SCHEMA = """syntax = "proto3";
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message Scope { string name = 1; string version = 2; }
message Status { string message = 2; int32 code = 3; }
message Span { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9;
  Status status = 15; }
message ScopeSpans { Scope scope = 1; repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
"""
_KV = ("Array(Tuple(key String, value Tuple(string_value String, bool_value Bool, int_value Int64, "
       "double_value Float64)))")
STRUCTURE = (
    f"resource_spans Array(Tuple(resource Tuple(attributes {_KV}), scope_spans Array(Tuple("
    "scope Tuple(name String, version String), spans Array(Tuple(trace_id String, span_id String, trace_state String, "
    "parent_span_id String, name String, kind Int32, start_time_unix_nano UInt64, end_time_unix_nano UInt64, "
    f"attributes {_KV}, status Tuple(message String, code Int32)))))))"
)
TABLE = """CREATE TABLE {name} (
    Timestamp DateTime64(9), TraceId String, SpanId String, ParentSpanId String, TraceState String,
    SpanName LowCardinality(String), SpanKind LowCardinality(String), ServiceName LowCardinality(String),
    ResourceAttributes Map(LowCardinality(String), String), ScopeName String, ScopeVersion String,
    SpanAttributes Map(LowCardinality(String), String), Duration UInt64,
    StatusCode LowCardinality(String), StatusMessage String
) ENGINE = MergeTree ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))"""
_KINDS = "['Unspecified', 'Internal', 'Server', 'Client', 'Producer', 'Consumer']"
_STATUSES = "['Unset', 'Ok', 'Error']"


def _as_map(expr: str) -> str:
    """An OTLP attribute list as the rows' map: every value as text, as the Python decoder writes it."""
    value = ("multiIf(kv.value.string_value != '', kv.value.string_value, kv.value.int_value != 0, "
             "toString(kv.value.int_value), kv.value.double_value != 0, toString(kv.value.double_value), "
             "kv.value.bool_value, 'true', '')")
    return f"mapFromArrays(arrayMap(kv -> kv.key, {expr}), arrayMap(kv -> {value}, {expr}))"


COLUMNS = ("Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName, "
           "ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage")


def native_insert(table: str, path: Path, schema: Path, project: str) -> str:
    """The requests at ``path`` flattened into ``table``, every resource stamped with ``project``
    (as the collector stamps the key's project)."""
    resource = f"mapUpdate({_as_map('rs.resource.attributes')}, map('infersight.project', '{project}'))"
    return f"""INSERT INTO {table} ({COLUMNS})
SELECT
    fromUnixTimestamp64Nano(toInt64(sp.start_time_unix_nano)), lower(hex(sp.trace_id)), lower(hex(sp.span_id)),
    lower(hex(sp.parent_span_id)), sp.trace_state, sp.name, arrayElement({_KINDS}, sp.kind + 1),
    {resource}['service.name'], {resource}, ss.scope.name, ss.scope.version, {_as_map('sp.attributes')},
    sp.end_time_unix_nano - sp.start_time_unix_nano, arrayElement({_STATUSES}, sp.status.code + 1), sp.status.message
FROM file('{path}', 'Protobuf', '{STRUCTURE}')
ARRAY JOIN resource_spans AS rs
ARRAY JOIN rs.scope_spans AS ss
ARRAY JOIN ss.spans AS sp
SETTINGS format_schema = '{schema}:ExportTraceServiceRequest'"""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(requests: int, rounds: int, product: bool = False) -> str:
    bodies = [build_body(512, seed, content=True) for seed in range(requests)]
    spans = 512 * requests
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        schema = work / "otlp.proto"
        schema.write_text(SCHEMA)
        delimited = work / "requests.bin"
        rows_path = work / "rows.json"
        # ask: the first row of a query's answer as text ("" for none); source: each side's rows
        if product:  # one store (one chDB path a process): the two sides are two projects
            store = ChdbStore(work / "store")

            def ask(sql: str) -> str:
                return ",".join(str(v) for row in store.query(sql)[:1] for v in row.values())

            def insert_python(rows: bytes) -> None:
                store.insert("otel_traces", rows)

            native_table, close = "otel_traces", store.close
            source = {name: f"otel_traces WHERE ResourceAttributes['infersight.project'] = '{name}'"
                      for name in ("python", "native")}
        else:
            db = session.Session(str(work / "db"))

            def ask(sql: str) -> str:
                return str(db.query(sql, "CSV")).strip()

            def insert_python(rows: bytes) -> None:
                rows_path.write_bytes(rows)
                db.query(f"INSERT INTO python_rows SELECT * FROM file('{rows_path}', 'JSONEachRow') "
                         "SETTINGS input_format_skip_unknown_fields = 1")

            native_table, close = "native_rows", db.close
            source = {name: f"{name}_rows" for name in ("python", "native")}
            for table in source.values():
                db.query(TABLE.format(name=table))
        python_us: list[float] = []
        native_us: list[float] = []
        for round_ in range(rounds):
            # New trace ids each round: the store drops a block it has seen (its deduplication window).
            fresh = [_fresh_ids(body, round_ * requests + i) for i, body in enumerate(bodies)]
            delimited.write_bytes(b"".join(_varint(len(body)) + body for body in fresh))
            start = _cpu_s()
            decoded = [decode_request("python", body, None, "application/x-protobuf", 1 << 30) for body in fresh]
            insert_python(b"".join(lz4.frame.decompress(d.entry.rows_z) for d in decoded if d.entry is not None))
            python_us.append((_cpu_s() - start) / spans * 1e6)
            start = _cpu_s()
            ask(native_insert(native_table, delimited, schema, "native"))
            native_us.append((_cpu_s() - start) / spans * 1e6)
        counts = [ask(f"SELECT count(), sum(length(SpanAttributes['gen_ai.input.messages'])) FROM {source[name]}")
                  for name in ("python", "native")]
        # The same spans either way: the decoded fields both paths write, compared row by row.
        fields = ("TraceId, SpanId, ParentSpanId, Timestamp, Duration, SpanName, SpanKind, ServiceName, StatusCode, "
                  "ScopeName, SpanAttributes['gen_ai.input.messages'], SpanAttributes['gen_ai.output.messages'], "
                  "SpanAttributes['gen_ai.usage.input_tokens'], SpanAttributes['infersight.tenant.id']")
        differ = ask(f"SELECT count() FROM (SELECT {fields} FROM {source['python']} "
                     f"EXCEPT SELECT {fields} FROM {source['native']})")
        views = [ask(f"SELECT count(), round(sum(cost_usd), 6) FROM llm_spans WHERE project = '{name}'")
                 for name in ("python", "native")] if product else []
        close()
    python, native = statistics.median(python_us), statistics.median(native_us)
    where = "the collector's otel_traces and its views" if product else "a plain MergeTree table"
    lines = [
        f"{requests} requests of 512 spans with content ({spans:,} spans) a round into {where}, {rounds} rounds "
        "in turns; CPU µs a span (median):",
        "",
        "| path | decode and insert, CPU µs a span | rows stored, input-message characters |",
        "|---|---:|---:|",
        f"| Python `decode_request`, chDB JSONEachRow insert | {python:.1f} | {counts[0]} |",
        f"| chDB `FORMAT Protobuf`, ARRAY JOIN, insert | {native:.1f} | {counts[1]} |",
        "",
        f"ClickHouse's own decoding: {native / python:.2f}x the CPU of the Python path. Rows of the Python path "
        f"without an equal row of the native one (ids, times, names, kind, status, scope, messages, tokens, "
        f"tenant): {differ}.",
    ]
    if views:
        lines.append(f"llm_spans (rows, cost), Python / native: {views[0]} / {views[1]}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="512-span requests in one batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--product-schema", action="store_true",
                        help="into the collector's otel_traces and its views, not a plain table")
    args = parser.parse_args()
    print(run(args.requests, args.rounds, args.product_schema))


if __name__ == "__main__":
    main()

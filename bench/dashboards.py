"""Dashboard page speed at 1 million GenAI spans in the embedded store.

Generates the spans inside ClickHouse (``INSERT INTO otel_traces SELECT ... FROM numbers()``,
in batches, so the materialized views fill llm_spans, llm_span_extras and the rollups as in
production), plus detections, judge scores and alerts; then serves every page through the
real app (in-process ASGI client) and prints median and worst times per page and range.

    python bench/dashboards.py [--spans 1000000] [--repeat 5] [--days 8] [--only search] [--against COMMIT]

``--only search`` serves only the text-search rows; ``--against COMMIT`` serves the search rows
a second time, interleaved run by run, with the trace search (``collector/store/_trace_search.py``)
of another commit, so the two are compared on the same data under the same load.

Spans: three per trace (retrieval, rerank, chat) over the last ``--days`` days; 3 services,
6 routes, 20 tenants, 4 chat models, 2 app versions, 5,000 users, 3% errors. Target: every
page under 300 ms.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROJECT = "bench"

_SPANS = """
INSERT INTO otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ServiceName,
    ResourceAttributes, ScopeName, SpanAttributes, Duration, StatusCode, StatusMessage)
WITH
  number AS n,
  intDiv(n, 3) AS t,
  n % 3 AS k,
  ['retrieval', 'rerank', 'chat'][k + 1] AS op,
  {end_ns:Int64} - toInt64({span_ns:Int64} * (n / {total:UInt64})) AS start_ns,
  t % 6 AS r,
  ['support-bot', 'search-api', 'summarizer'][r % 3 + 1] AS svc,
  ['support.answer', 'support.triage', 'search.query', 'search.suggest',
   'summarize.doc', 'summarize.thread'][r + 1] AS route,
  concat('tenant-', toString(cityHash64(t, 'tenant') % 20)) AS tenant,
  ['gpt-4o-mini', 'gpt-4o', 'claude-3-5-haiku', 'llama-3-70b'][cityHash64(t, 'm') % 4 + 1] AS model,
  (cityHash64(t, 'q') % 1000) / 1000.0 AS u,
  0.01 + u * u * 0.8 AS queue_wait,
  0.1 + (cityHash64(t, 'p') % 1000) / 2000.0 AS prefill,
  toUInt64(50 + cityHash64(t, 'o') % 800) AS out_tok,
  toUInt64(200 + cityHash64(t, 'i') % 4000) AS in_tok,
  0.01 + (cityHash64(t, 'itl') % 100) / 5000.0 AS itl,
  cityHash64(t, 'e') % 100 < 3 AS failed
SELECT
  fromUnixTimestamp64Nano(start_ns + k * 50000000),
  lower(hex(cityHash64(t, 'trace', {seed:UInt64}))) || lower(hex(cityHash64(t, 'trace2', {seed:UInt64}))),
  lower(hex(cityHash64(n, 'span', {seed:UInt64}))),
  '',
  concat(op, ' ', model),
  'Client',
  svc,
  map('service.name', svc, 'service.version', ['v1', 'v2'][t % 2 + 1], 'infersight.project', {project:String}),
  'infersight.sdk',
  if(k = 2,
    map('gen_ai.operation.name', 'chat', 'gen_ai.provider.name', 'openai', 'gen_ai.request.model', model,
        'gen_ai.usage.input_tokens', toString(in_tok), 'gen_ai.usage.output_tokens', toString(out_tok),
        'infersight.cost.usd', toString(in_tok * 0.00000015 + out_tok * 0.0000006),
        'gen_ai.response.time_to_first_chunk', toString(prefill), 'infersight.queue.wait_s', toString(queue_wait),
        'infersight.queue.source', 'argument', 'infersight.prefill_s', toString(prefill),
        'infersight.itl.p50_s', toString(itl), 'infersight.itl.p95_s', toString(itl * 2.5),
        'infersight.itl.max_s', toString(itl * 6), 'infersight.tpot_s', toString(itl * 1.1),
        'infersight.tenant.id', tenant, 'infersight.user.id', concat('u-', toString(cityHash64(t, 'u') % 5000)),
        'infersight.route', route, 'gen_ai.response.finish_reasons', '["stop"]',
        'gen_ai.input.messages', concat('[{"role":"user","parts":[{"type":"text","content":"Question ', toString(t),
            ' about invoices and refunds for order ', toString(cityHash64(t) % 100000), '"}]}]'),
        'gen_ai.output.messages', concat('[{"role":"assistant","parts":[{"type":"text","content":"Answer ', toString(t),
            ': your refund was processed. Anything else I can help with today?"}]}]')),
    map('gen_ai.operation.name', op, 'infersight.tenant.id', tenant, 'infersight.route', route,
        'gen_ai.request.model', if(k = 0, 'bge-small', 'bge-reranker'),
        'infersight.rerank.candidates', toString(20 + cityHash64(t, 'c') % 80))),
  toUInt64(if(k = 2, (prefill + itl * 1.1 * out_tok) * 1e9, (0.02 + u * 0.1) * 1e9)),
  if(k = 2 AND failed, 'Error', 'Unset'),
  ''
FROM numbers({offset:UInt64}, {count:UInt64})
"""

_DETECTIONS = """
INSERT INTO detections
SELECT project, ts, trace_id, span_id, service, tenant, route, model,
  ['repetition', 'json', 'refusal', 'truncation', 'context_stuffing'][cityHash64(span_id) % 5 + 1] AS detector, '1',
  multiIf(detector = 'json', ['json.truncated', 'json.malformed', 'json.wrapped'][cityHash64(span_id, 'j') % 3 + 1],
          detector = 'repetition', 'repetition.loop', detector = 'refusal', 'refusal.phrase',
          detector = 'truncation', 'truncation.length', 'context_stuffing.input_tokens'),
  1.0, 'evidence text'
FROM llm_spans WHERE project = {project:String} AND operation = 'chat' AND cityHash64(span_id) % 100 < 2
"""

_JUDGE = """
INSERT INTO judge_scores
SELECT project, ts, now64(3), trace_id, span_id, tenant, route, service_version, 'judge-small', 'helpfulness', 1,
  toUInt8(1 + cityHash64(span_id, 's') % 5), 'reason', 0.0001, 0.4, 0.05, 'sample'
FROM llm_spans WHERE project = {project:String} AND operation = 'chat' AND cityHash64(span_id) % 1000 < 5
"""

PAGES = ["/", "/latency", "/cost", "/quality", "/alerts", "/traces"]
SEARCH = "/traces?q=refund+order+4242"
ROOT = Path(__file__).resolve().parents[1]


def search_of(commit: str) -> object:
    """``find_traces`` as ``commit`` wrote it, loaded beside the current one (same package, so its
    relative imports resolve to today's store; only the search itself is the other commit's)."""
    source = subprocess.run(["git", "show", f"{commit}:collector/store/_trace_search.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    name = "infersight.collector.store._trace_search_" + commit.replace("-", "_").replace("~", "_")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "infersight.collector.store"
    sys.modules[name] = module
    exec(compile(source, f"{commit}:_trace_search.py", "exec"), module.__dict__)
    return module.find_traces


def load(store: object, spans: int, days: float, batch: int = 250_000) -> float:
    """Insert ``spans`` generated spans (and their detections and judge scores); seconds taken."""
    started = time.perf_counter()
    end_ns = time.time_ns()
    for offset in range(0, spans, batch):
        store.query(_SPANS, {  # type: ignore[attr-defined]
            "end_ns": end_ns, "span_ns": int(days * 86400e9), "total": spans, "seed": 1,
            "project": PROJECT, "offset": offset, "count": min(batch, spans - offset),
        })
        print(f"  {min(offset + batch, spans):>9,} spans", file=sys.stderr)
    store.query(_DETECTIONS, {"project": PROJECT})  # type: ignore[attr-defined]
    try:
        store.query(_JUDGE, {"project": PROJECT})  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - the judges' table may not exist in this checkout
        print(f"  no judge scores: {exc}", file=sys.stderr)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--days", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-merge", action="store_true",
                        help="measure right after loading, before the rollups' parts are merged")
    parser.add_argument("--only", choices=["search"], help="serve only the text-search rows")
    parser.add_argument("--against", metavar="COMMIT", help="also serve the search rows with this commit's search")
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from infersight.collector import ChdbStore, Settings, create_app

    with tempfile.TemporaryDirectory() as tmp:
        store = ChdbStore(Path(tmp) / "data")
        print(f"loading {args.spans:,} spans ...", file=sys.stderr)
        seconds = load(store, args.spans, args.days)
        if not args.no_merge:
            # In steady state the background merges have compacted every finished hour.
            for table in ("llm_hourly", "llm_tenant_hourly"):
                store.query(f"OPTIMIZE TABLE {table} FINAL")
        counts = store.query(
            "SELECT (SELECT count() FROM llm_spans) AS spans, (SELECT count() FROM llm_hourly) AS rollup,"
            " (SELECT count() FROM llm_tenant_hourly) AS tenant_rollup, (SELECT count() FROM detections) AS detections"
        )[0]
        print(f"loaded in {seconds:.1f} s: {counts}", file=sys.stderr)
        queries: list[float] = []
        original = store.query

        def timed(sql: str, params: object = None) -> list:
            t0 = time.perf_counter()
            try:
                return original(sql, params)  # type: ignore[arg-type]
            finally:
                queries.append(time.perf_counter() - t0)

        store.query = timed  # type: ignore[method-assign]
        app = create_app(Settings(data_dir=Path(tmp), auth=False, alerts=False, project=PROJECT), store=store)
        trace_id = original("SELECT trace_id FROM llm_spans WHERE project = {p:String} ORDER BY ts DESC LIMIT 1",
                            {"p": PROJECT})[0]["trace_id"]
        targets = [] if args.only else [(path, rng) for rng in ("1h", "24h", "7d") for path in PAGES]
        targets += [(SEARCH, "24h"), (SEARCH, "7d")]
        targets += [] if args.only else [(f"/traces/{trace_id}", None)]
        from infersight.dashboards import _traces

        searches = {"": _traces.find_traces}
        if args.against:
            searches[f" @{args.against}"] = search_of(args.against)
        rows = []
        with TestClient(app) as client:
            for path, rng in targets:
                url = path if rng is None else path + ("&" if "?" in path else "?") + f"range={rng}"
                if path == "/" and rng is not None:
                    url = f"/?range={rng}"
                variants = searches if path == SEARCH else {"": searches[""]}
                measured: dict[str, tuple[list[float], list[tuple[int, float]]]] = {v: ([], []) for v in variants}
                for search in variants.values():
                    _traces.find_traces = search  # type: ignore[attr-defined]
                    client.get(url)  # warm up: first use of each query shape
                for _ in range(args.repeat):
                    for variant, search in variants.items():  # interleaved: both see the same load
                        _traces.find_traces = search  # type: ignore[attr-defined]
                        queries.clear()
                        t0 = time.perf_counter()
                        response = client.get(url)
                        measured[variant][0].append(time.perf_counter() - t0)
                        measured[variant][1].append((len(queries), sum(queries)))
                        assert response.status_code == 200, (url, response.status_code)
                _traces.find_traces = searches[""]  # type: ignore[attr-defined]
                for variant, (times, per_query) in measured.items():
                    n, spent = per_query[-1]
                    rows.append((url + variant, statistics.median(times) * 1e3, max(times) * 1e3, n, spent * 1e3))
        store.query = original  # type: ignore[method-assign]
        print(f"\n{args.spans:,} GenAI spans over {args.days:g} days; {args.repeat} runs per page after one warm-up\n")
        print(f"| {'page':<48} | {'median ms':>9} | {'max ms':>7} | {'queries':>7} | {'in store ms':>11} |")
        print(f"|{'-' * 50}|{'-' * 11}|{'-' * 9}|{'-' * 9}|{'-' * 13}|")
        for url, median, worst, n, spent in rows:
            flag = "" if median < 300 else "  <-- over 300 ms"
            print(f"| {url:<48} | {median:>9.0f} | {worst:>7.0f} | {n:>7} | {spent:>11.0f} |{flag}")
        store.close()


if __name__ == "__main__":
    main()

"""Collector ingest throughput: OTLP/HTTP protobuf over a real socket into the embedded store.

Starts ``infersight collector`` as a child process (as the demo does) with a real project key,
POSTs pre-encoded ``ExportTraceServiceRequest`` bodies of GenAI spans from a few client threads
for a bounded time and span count, then waits for the spool to drain and checks via
``/api/v1/summary`` that every acknowledged span was stored.

The collector acknowledges a request once its spans are durable in the spool and stores them
afterwards, so two rates matter: spans acknowledged per second (what exporters see) and spans
stored per second including the drain (what the store sustains).

    .venv/bin/python bench/ingest.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

HOST = "127.0.0.1"  # never send anywhere else
INFERSIGHT = str(Path(sys.executable).with_name("infersight"))  # this venv's console script
TARGET_SPANS_PER_S = 20_000  # the collector's target
CLIENT_THREADS = 4
BODY_POOL = 8  # bodies per batch size, reused round-robin, each time with new ids (see _fresh_ids)
# Every trace id of a pooled body starts with these 8 bytes; each request replaces them with a
# number of its own, so no span is sent twice (the collector stores a span once, however often sent).
_ID_MARK = bytes.fromhex("5eed1d5eed1d5eed")
_REQUESTS = itertools.count(1)
PROJECT = "bench"
_TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
_MODELS = (("openai", "gpt-4o-mini", 0.15, 0.60), ("openai", "gpt-4o", 2.5, 10.0),
           ("anthropic", "claude-3-5-haiku-latest", 0.8, 4.0))
_ROUTES = ("support.answer", "search.summarize", "billing.explain")


def kv(key: str, value: str | int | float | list[str]) -> KeyValue:
    if isinstance(value, bool):
        raise TypeError("no bool attributes here")
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    if isinstance(value, list):
        array = ArrayValue(values=[AnyValue(string_value=v) for v in value])
        return KeyValue(key=key, value=AnyValue(array_value=array))
    return KeyValue(key=key, value=AnyValue(string_value=value))


_WORDS = ("invoice", "refund", "account", "billing", "plan", "order", "shipping", "password", "the", "your",
          "we", "can", "see", "that", "please", "check", "under", "settings", "and", "it", "was", "updated")


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words).capitalize() + "."


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _span(rng: random.Random, now_ns: int, content: bool = False) -> Span:
    provider, model, in_price, out_price = rng.choice(_MODELS)
    tokens_in, tokens_out = rng.randint(50, 4000), rng.randint(5, 800)
    start = now_ns - rng.randint(1, 60_000) * 1_000_000  # within the last minute
    error = rng.random() < 0.02
    attributes = [
        kv("gen_ai.operation.name", "chat"),
        kv("gen_ai.provider.name", provider),
        kv("gen_ai.request.model", model),
        kv("gen_ai.response.model", model),
        kv("gen_ai.usage.input_tokens", tokens_in),
        kv("gen_ai.usage.output_tokens", tokens_out),
        kv("gen_ai.response.finish_reasons", ["length" if tokens_out == 800 else "stop"]),
        kv("infersight.tenant.id", rng.choice(_TENANTS)),
        kv("infersight.user.id", f"u-{rng.randint(1, 5000)}"),
        kv("infersight.route", rng.choice(_ROUTES)),
        kv("infersight.cost.usd", (tokens_in * in_price + tokens_out * out_price) / 1e6),
        kv("infersight.cost.source", f"genai-prices:{provider}/{model}"),
    ]
    if error:
        attributes.append(kv("error.type", "RateLimitError"))
    if content:  # what the SDK sends with content capture on: the detectors read the output
        answer = _text(rng, 400)
        if rng.random() < 0.02:  # a few answers stuck in a loop
            answer = "Let me check. " + "I will retry the lookup and report back. " * 12
        attributes += [kv("gen_ai.input.messages", _messages("user", _text(rng, 1000))),
                       kv("gen_ai.output.messages", _messages("assistant", answer))]
    return Span(
        trace_id=_ID_MARK + rng.randbytes(8),
        span_id=rng.randbytes(8),
        name=f"chat {model}",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=start + rng.randint(200, 8000) * 1_000_000,
        attributes=attributes,
        status=Status(code=Status.STATUS_CODE_ERROR if error else Status.STATUS_CODE_UNSET),
    )


def _fresh_ids(body: bytes, request: int) -> bytes:
    """``body`` with every trace id made new: a C-speed replace, so the client stays cheap."""
    return body.replace(_ID_MARK, (request + 1).to_bytes(8, "big"))


def build_body(spans: int, seed: int, content: bool = False) -> bytes:
    """One serialized ExportTraceServiceRequest, shaped like the SDK's exporter sends it."""
    rng = random.Random(seed)
    now = time.time_ns()
    service = Resource(attributes=[kv("service.name", "support-bot"), kv("service.version", "1.4.2"),
                                   kv("telemetry.sdk.language", "python")])
    scope = InstrumentationScope(name="infersight.sdk", version="0.1.0")
    request = ExportTraceServiceRequest(resource_spans=[
        ResourceSpans(resource=service, scope_spans=[
            ScopeSpans(scope=scope, spans=[_span(rng, now, content) for _ in range(spans)])
        ])
    ])
    return request.SerializeToString()


@dataclass
class IngestResult:
    batch: int
    content: bool  # spans carry input and output messages, so the inline detectors run on each
    body_bytes: int
    requests_ok: int
    requests_failed: int
    spans_acked: int
    load_s: float  # first request sent .. last response received
    stored_during_load: int | None  # from the collector's own counter; None if it has none
    drain_s: float | None  # after the load, until every acked span was counted; None: timed out
    spans_stored: int  # by /api/v1/summary, after the drain
    latencies_s: list[float]
    collector_cpu_s: float  # over load_s
    client_cpu_s: float  # this process (the client threads), over load_s
    max_spool_age_s: float  # oldest unstored entry, sampled during the load: ack -> queryable, worst seen
    max_rss_mib: float  # collector and its workers together, sampled during the load
    cpu_by_place: dict[str, float]  # CPU_PLACES -> CPU time over load time (1.0 = one core)
    max_backlog: int = 0  # stored spans the detectors had yet to analyse, worst seen during the load
    sampled: int | None = None  # outputs the detectors left out (behind their backlog bound); None: not known

    @property
    def acked_per_s(self) -> float:
        return self.spans_acked / self.load_s

    @property
    def stored_per_s(self) -> float | None:
        """End to end: acknowledged spans over load plus drain time."""
        return None if self.drain_s is None else self.spans_acked / (self.load_s + self.drain_s)

    def latency_ms(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Collector:
    """The collector child process plus the HTTP calls the benchmark makes besides the load."""

    def __init__(self, data_dir: Path, extra_args: tuple[str, ...] = (), infersight: str = INFERSIGHT) -> None:
        self.key = _create_key(data_dir, infersight)
        self.process = CollectorChild(data_dir, free_port(), extra_args, infersight=infersight)
        self.pid = self.process.pid
        self.url = self.process.url
        self.auth = {"authorization": f"Bearer {self.key}"}
        # trust_env=False: a proxy from the environment must never see this traffic.
        self.http = httpx.Client(trust_env=False, timeout=60)

    def stored_spans(self) -> int:
        response = self.http.get(f"{self.url}/api/v1/summary", params={"since": "1h"}, headers=self.auth)
        response.raise_for_status()
        return int(response.json()["spans"])

    def metric(self, name: str) -> float | None:
        """A value from ``/metrics`` (Prometheus text), or None if the collector has no such metric."""
        return self.metrics(name)[name]

    def metrics(self, *names: str) -> dict[str, float | None]:
        """Values from one read of ``/metrics``, by name (None: no such metric)."""
        text = self.http.get(f"{self.url}/metrics").text
        found = {name: re.search(rf"^{re.escape('infersight_' + name)} (\d+(?:\.\d+)?)$", text, re.MULTILINE)
                 for name in names}
        return {name: None if match is None else float(match.group(1)) for name, match in found.items()}

    def _processes(self) -> list[Path]:
        """/proc entries of the collector and its children (the decode workers)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if stat.parent.name == str(self.pid) or fields[1] == str(self.pid):  # fields[1]: the parent
                out.append(stat.parent)
        return out

    def thread_ticks(self) -> dict[tuple[str, str], tuple[str, int]]:
        """CPU clock ticks so far per thread ((pid, tid) -> (where, ticks)): decode workers,
        ClickHouse inserts, ClickHouse merges, the server's Python threads, the rest. A profile
        by thread, because most of the collector's CPU is spent in chDB's native threads, which
        a Python profiler does not see."""
        out: dict[tuple[str, str], tuple[str, int]] = {}
        for proc in self._processes():
            is_server = proc.name == str(self.pid)
            for task in (proc / "task").glob("*/stat"):
                try:
                    raw = task.read_text()
                except OSError:
                    continue
                name = raw[raw.index("(") + 1 : raw.rindex(")")]
                fields = raw.rsplit(")", 1)[1].split()
                out[(proc.name, task.parent.name)] = (
                    _thread_category(is_server, name), int(fields[11]) + int(fields[12])
                )
        return out

    def rss_mib(self) -> float:
        total = 0
        for proc in self._processes():
            try:
                status = (proc / "status").read_text()
            except OSError:
                continue
            match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
            total += int(match.group(1)) if match else 0
        return total / 1024

    def cpu_seconds(self) -> float:
        """utime + stime of the collector and its decode workers, so the table can say whether
        the collector was the bottleneck."""
        total = 0
        for proc in self._processes():
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.http.close()
        self.process.stop()


# Outputs the detectors skipped while behind (past their backlog bound they analyse 1 in N).
SAMPLED_METRIC = 'outputs_not_analysed_total{reason="sampled"}'
CPU_PLACES = ("decode workers", "server: Python (HTTP, spool, writer)", "chDB: inserts and views",
              "chDB: merges", "other, and threads that ended during the load")


def _thread_category(is_server: bool, thread_name: str) -> str:
    if not is_server:
        return CPU_PLACES[0]
    # Python threads keep the name of the program started: the interpreter's, or the console
    # script's (which is how the benchmark starts the collector)
    if thread_name.startswith(("python", "infersight")):
        return CPU_PLACES[1]
    if thread_name.startswith(("ThreadPool", "QueryPipeline", "QueryPullPipeEx", "PushingAsyncPipe")):
        return CPU_PLACES[2]
    if thread_name.startswith("MergeMutate"):
        return CPU_PLACES[3]
    return CPU_PLACES[4]


def _create_key(data_dir: Path, infersight: str = INFERSIGHT) -> str:
    # The documented CLI, as an operator would; the key is the first line of its stdout. The
    # benchmark reads the summary too, so an admin key where keys have roles.
    command = [infersight, "keys", "create", "--project", PROJECT, "--data-dir", str(data_dir)]
    roles = "--role" in subprocess.run([infersight, "keys", "create", "--help"], capture_output=True, text=True).stdout
    done = subprocess.run(command + (["--role", "admin"] if roles else []), capture_output=True, text=True, check=True)
    return done.stdout.splitlines()[0].strip()


class CollectorChild:
    """``infersight collector`` started as an operator starts it, in a child process; ready once
    ``/healthz`` answers."""

    def __init__(self, data_dir: Path, port: int, extra_args: tuple[str, ...] = (), timeout_s: float = 60.0,
                 infersight: str = INFERSIGHT) -> None:
        self.url = f"http://{HOST}:{port}"
        self.process = subprocess.Popen([infersight, "collector", "--port", str(port), "--data-dir", str(data_dir),
                                         *extra_args])
        self.pid = self.process.pid
        ready = wait_until(self._ready, timeout_s)
        if ready is None:
            self.stop()
            raise TimeoutError(f"the collector did not answer within {timeout_s} s (exit code {self.process.poll()})")

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the collector exited with code {self.process.returncode}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM, as a clean shutdown; SIGKILL if it has not ended within ``timeout_s``."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def load(
    c: Collector, batch: int, seconds: float, max_spans: int, drain_timeout_s: float, content: bool = False
) -> IngestResult:
    """Drive the collector with ``batch``-span bodies until ``seconds`` pass or ``max_spans`` are sent."""
    bodies = [build_body(batch, seed=batch * 1000 + i, content=content) for i in range(BODY_POOL)]
    headers = {"content-type": "application/x-protobuf", **c.auth}
    lock = threading.Lock()
    sent = acked = ok = failed = 0  # sent: spans reserved for sending, to stop at max_spans
    latencies: list[float] = []

    warm_up = _fresh_ids(bodies[0], next(_REQUESTS))
    c.http.post(f"{c.url}/v1/traces", content=warm_up, headers=headers).raise_for_status()
    wait_until(lambda: c.metric("spool_rows") == 0, drain_timeout_s)
    stored_before = c.stored_spans()
    counter_before = c.metric("spans_stored_total")
    cpu_before, client_before = c.cpu_seconds(), _own_cpu_seconds()
    ticks_before = c.thread_ticks()

    def worker(index: int) -> None:
        nonlocal sent, acked, ok, failed
        with httpx.Client(trust_env=False, timeout=60) as client:
            i = index
            while time.monotonic() < deadline:
                with lock:
                    if sent + batch > max_spans:
                        return
                    sent += batch
                body = _fresh_ids(bodies[i % BODY_POOL], next(_REQUESTS))
                t0 = time.perf_counter()
                response = client.post(f"{c.url}/v1/traces", content=body, headers=headers)
                elapsed = time.perf_counter() - t0
                i += CLIENT_THREADS
                with lock:
                    latencies.append(elapsed)
                    if response.status_code == 200:
                        ok += 1
                        acked += batch
                    else:
                        failed += 1

    ages: list[float] = []
    rss: list[float] = []
    backlog: list[float] = []
    sampled_before = c.metric(SAMPLED_METRIC)

    def monitor() -> None:
        # Four times a second: cheap next to the load (one small GET, a few /proc reads).
        while not stop_monitor.wait(0.25):
            now = c.metrics("spool_oldest_age_seconds", "detection_backlog_spans")
            ages.append(now["spool_oldest_age_seconds"] or 0.0)
            backlog.append(now["detection_backlog_spans"] or 0.0)
            rss.append(c.rss_mib())

    started = time.monotonic()
    deadline = started + seconds
    stop_monitor = threading.Event()
    watcher = threading.Thread(target=monitor)
    watcher.start()
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(CLIENT_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    load_s = time.monotonic() - started
    stop_monitor.set()
    watcher.join()
    cpu, client_cpu = c.cpu_seconds() - cpu_before, _own_cpu_seconds() - client_before
    ticks = c.thread_ticks()
    per_tick = 1 / os.sysconf("SC_CLK_TCK") / load_s
    by_place = dict.fromkeys(CPU_PLACES, 0.0)
    for thread, (place, now) in ticks.items():  # a thread that started during the load counts from 0
        by_place[place] += max(now - ticks_before.get(thread, (place, 0))[1], 0) * per_tick
    # A thread that ended took its ticks with it; the process totals still hold them.
    by_place[CPU_PLACES[-1]] += max(cpu / load_s - sum(by_place.values()), 0.0)
    counter_after = c.metric("spans_stored_total")
    stored_during = None
    if counter_before is not None and counter_after is not None:
        stored_during = int(counter_after - counter_before)

    drain_s = wait_until(lambda: c.stored_spans() - stored_before >= acked, drain_timeout_s)
    stored = c.stored_spans() - stored_before
    wait_until(lambda: c.metric("detection_backlog_spans") == 0, drain_timeout_s)
    sampled_after = c.metric(SAMPLED_METRIC)
    sampled = None if sampled_before is None or sampled_after is None else int(sampled_after - sampled_before)
    return IngestResult(batch, content, len(bodies[0]), ok, failed, acked, load_s, stored_during, drain_s, stored,
                        latencies, cpu, client_cpu, max(ages, default=0.0), max(rss, default=0.0), by_place,
                        int(max(backlog, default=0.0)), sampled)


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_until(condition: Callable[[], bool], timeout_s: float) -> float | None:
    """Seconds until ``condition()`` held (polled every 50 ms), or None after ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            return None
        time.sleep(0.05)
    return time.monotonic() - started


def run(quick: bool = False, batches: tuple[int, ...] = (512,), content: tuple[bool, ...] = (False, True),
        collector_args: tuple[str, ...] = (), rounds: int = 1) -> list[IngestResult]:
    """Each load ``rounds`` times against one collector (so later rounds also merge earlier data):
    one run on this shared machine can be 15% off the next."""
    seconds, max_spans, drain_timeout_s = (4.0, 100_000, 30.0) if quick else (15.0, 600_000, 60.0)
    data_dir = Path(tempfile.mkdtemp(prefix="infersight-bench-"))
    collector: Collector | None = None
    try:
        collector = Collector(data_dir, collector_args)
        return [load(collector, b, seconds, max_spans, drain_timeout_s, with_content)
                for with_content in content for b in batches for _ in range(rounds)]
    finally:
        if collector is not None:
            collector.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def queryable(c: Collector, rate: float, seconds: float, batch: int, drain_timeout_s: float) -> list[float]:
    """Seconds from each acknowledgement until its spans are queryable, at ``rate`` spans/s of
    spans with content (paced, from ``CLIENT_THREADS`` threads).

    A probe counts the stored spans through ``/api/v1/summary`` every 0.2 s (the resolution of
    the figure). The spool is drained oldest first, so the spans of a request acknowledged when
    ``n`` spans had been acknowledged are queryable once ``n`` are: its latency is the first
    probe at or above ``n`` minus the time of the acknowledgement.
    """
    bodies = [build_body(batch, seed=batch * 1000 + i, content=True) for i in range(BODY_POOL)]
    headers = {"content-type": "application/x-protobuf", **c.auth}
    c.http.post(f"{c.url}/v1/traces", content=_fresh_ids(bodies[0], next(_REQUESTS)), headers=headers)
    wait_until(lambda: c.stored_spans() >= batch, drain_timeout_s)  # warmed up: workers started, first insert
    before = c.stored_spans()
    lock = threading.Lock()
    acks: list[tuple[float, int]] = []  # (time of the ack, spans acknowledged up to and with it)
    probes: list[tuple[float, int]] = []
    acked = 0
    started = time.monotonic()
    per_thread_s = batch * CLIENT_THREADS / rate  # between one thread's requests

    def worker(index: int) -> None:
        nonlocal acked
        with httpx.Client(trust_env=False, timeout=60) as client:
            n = 0
            while (due := started + index * per_thread_s / CLIENT_THREADS + n * per_thread_s) < started + seconds:
                time.sleep(max(due - time.monotonic(), 0.0))
                body = _fresh_ids(bodies[(index + n) % BODY_POOL], next(_REQUESTS))
                response = client.post(f"{c.url}/v1/traces", content=body, headers=headers)
                with lock:
                    if response.status_code == 200:
                        acked += batch
                        acks.append((time.monotonic(), acked))
                n += 1

    def probe() -> None:
        while not done.wait(0.2):
            probes.append((time.monotonic(), c.stored_spans() - before))

    done = threading.Event()
    prober = threading.Thread(target=probe)
    prober.start()
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(CLIENT_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_until(lambda: bool(probes) and probes[-1][1] >= acked, drain_timeout_s)
    done.set()
    prober.join()
    out = []
    for at, upto in acks:
        seen = next((t for t, stored in probes if stored >= upto and t >= at), None)
        out.append(float("inf") if seen is None else seen - at)
    return out

T = TypeVar("T")

def _in_turns(collectors: list[str], rounds: int, run: Callable[[Collector], T]) -> dict[str, list[T]]:
    """``run`` on each collector build (an ``infersight`` script) in turns, A B A B ..., each on a
    fresh data directory, so the machine's load falls on each alike."""
    got: dict[str, list[T]] = {path: [] for path in collectors}
    for _ in range(rounds):
        for path in collectors:
            data_dir = Path(tempfile.mkdtemp(prefix="infersight-bench-"))
            collector = Collector(data_dir, infersight=path)
            try:
                got[path].append(run(collector))
            finally:
                collector.close()
                shutil.rmtree(data_dir, ignore_errors=True)
    return got


def compare_queryable(collectors: list[str], rate: float, seconds: float, rounds: int) -> str:
    """Ack -> queryable at ``rate`` for each collector build (an ``infersight`` script), run in
    turns (A B A B ...) so the machine's load falls on each alike."""
    got = {path: [x for one in runs for x in one]
           for path, runs in _in_turns(collectors, rounds, lambda c: queryable(c, rate, seconds, 512, 120.0)).items()}
    lines = [f"Ack -> queryable at {rate:,.0f} spans/s with content, 512 spans/request, {CLIENT_THREADS} threads, "
             f"{rounds} x {seconds:.0f} s each, in turns",
             "", "| collector | requests | p50 s | p99 s | worst s |", "|---|---:|---:|---:|---:|"]
    for path, latencies in got.items():
        ordered = sorted(latencies) or [float("nan")]
        p50, p99 = (ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.99))
        lines.append(f"| {path} | {len(latencies)} | {p50:.2f} | {p99:.2f} | {ordered[-1]:.2f} |")
    return "\n".join(lines)


def compare_load(collectors: list[str], content: bool, seconds: float, rounds: int) -> str:
    """The load of :func:`load` (512-span requests, as fast as acknowledged) for each collector
    build (an ``infersight`` script), in turns (A B A B ...) on a fresh data directory each, so
    the machine's load falls on each alike. CPU per acknowledged span, by place, is the figure a
    busy host moves least; rates are given beside it."""
    got = _in_turns(collectors, rounds, lambda c: load(c, 512, seconds, 600_000, 120.0, content))
    lines = [f"512 spans/request, {'with' if content else 'without'} content, {CLIENT_THREADS} threads, "
             f"{rounds} x {seconds:.0f} s each, in turns; CPU in µs per acknowledged span (median of the rounds)",
             "", "| collector | acked spans/s | stored spans/s end to end | ack -> stored, worst s | all stored | "
             "detection backlog, worst spans | outputs sampled | " + " | ".join(CPU_PLACES) + " | collector CPU |",
             "|---|---:|---:|---:|---|---:|---:|" + "---:|" * (len(CPU_PLACES) + 1)]
    for path, results in got.items():
        def median(values: list[float]) -> float:
            return statistics.median(values) if values else float("nan")

        per_span = [median([r.cpu_by_place[p] / r.acked_per_s * 1e6 for r in results]) for p in CPU_PLACES]
        total = median([r.collector_cpu_s / r.spans_acked * 1e6 for r in results])
        lines.append(
            f"| {path} | {median([r.acked_per_s for r in results]):,.0f} "
            f"| {median([r.stored_per_s or 0.0 for r in results]):,.0f} "
            f"| {median([r.max_spool_age_s for r in results]):.1f} "
            f"| {'yes' if all(r.spans_stored == r.spans_acked for r in results) else 'NO'} "
            f"| {max(r.max_backlog for r in results):,} | {_sampled(results)} | "
            + " | ".join(f"{v:.0f}" for v in per_span) + f" | {total:.0f} |"
        )
    return "\n".join(lines)


def _sampled(results: list[IngestResult]) -> str:
    """Outputs left out by the detectors over all ``results`` ("n/a": a build that does not count them)."""
    known = [r.sampled for r in results if r.sampled is not None]
    return f"{sum(known):,}" if known else "n/a"


STAGES = (
    "decode, normalise, JSON, LZ4 (worker, before the ack)", "spool append (server)",
    "repeat lookup (writer)", "chDB insert + views (writer)", "inline detectors (worker, after the ack)",
)


@dataclass
class StageCost:
    batch: int
    content: bool
    repeat: int
    us_per_span: dict[str, float]  # stage -> median µs of CPU per span


def stage_costs(batches: tuple[int, ...] = (512, 20_000), repeat: int = 10) -> list[StageCost]:
    """The pipeline's steps timed one by one in this process, to show where a span's time goes:
    the CPU time of the process (chDB's native threads included, and any merge they run meanwhile),
    which a shared host moves far less than the wall time.

    Calls the collector's internal functions, so it breaks loudly when they change (run.py then
    reports it and carries on). It opens an embedded store here, which chDB allows once per
    process, so run it last. 20,000 is the largest batch the spool writer merges requests into.
    """
    from infersight.collector.ingest import Decoder, decode_request
    from infersight.collector.spool import Spool
    from infersight.collector.store import ChdbStore

    try:  # the lookup of spans already stored, where the collector has one
        from infersight.collector.store import held_spans
    except ImportError:
        held_spans = None

    data_dir = Path(tempfile.mkdtemp(prefix="infersight-bench-stages-"))
    store = ChdbStore(data_dir / "store")
    spool = Spool(data_dir / "spool.db", max_bytes=1 << 34)
    detector = Decoder(0, limit_bytes=1 << 30)
    out = []
    try:
        for content in (False, True):
            for batch in batches:
                body = build_body(batch, seed=7, content=content)
                samples: dict[str, list[float]] = {k: [] for k in STAGES}
                for _ in range(repeat):
                    fresh = _fresh_ids(body, next(_REQUESTS))
                    t0 = time.process_time()
                    decoded = decode_request(PROJECT, fresh, None, "application/x-protobuf", 1 << 30)
                    assert decoded.entry is not None
                    t1 = time.process_time()
                    spool.append(decoded.entry)
                    t2 = time.process_time()
                    batch_rows = spool.next_batch(max_rows=batch, max_bytes=1 << 34)
                    assert batch_rows is not None
                    t3 = time.process_time()
                    if held_spans is not None:  # as the writer does, then records the decision
                        batch_rows = spool.decide(batch_rows, held_spans(store, batch_rows.keys, batch_rows.times))
                    t4 = time.process_time()
                    store.insert("otel_traces", batch_rows.rows, dedup_token=batch_rows.dedup_token)  # as the writer
                    t5 = time.process_time()
                    spool.done(batch_rows)
                    t6 = time.process_time()
                    detector.detect(batch_rows.rows)  # as the writer asks for it, in this process
                    t7 = time.process_time()
                    for key, dt in zip(STAGES, (t1 - t0, t2 - t1, t4 - t3, t5 - t4, t7 - t6), strict=True):
                        samples[key].append(dt)
                # Median, not mean: one merge falling into a step would dominate a mean.
                out.append(StageCost(batch, content, repeat,
                                     {k: statistics.median(v) / batch * 1e6 for k, v in samples.items()}))
    finally:
        spool.close()
        store.close()
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


def format_stages(costs: list[StageCost]) -> str:
    lines = [
        "| spans | content | " + " | ".join(STAGES) + " |",
        "|---:|---|" + "---:|" * len(STAGES),
    ]
    for c in costs:
        lines.append(f"| {c.batch:,} | {'yes' if c.content else 'no'} | "
                     + " | ".join(f"{c.us_per_span[k]:.1f}" for k in STAGES) + " |")
    return "\n".join(lines)


def format_table(results: list[IngestResult]) -> str:
    lines = [
        f"{CLIENT_THREADS} client threads, OTLP/HTTP protobuf, no gzip, with a project key; "
        "collector on 127.0.0.1 with the embedded store, inline detectors on. 'content': every span "
        "carries ~1 KB of input and ~0.4 KB of output messages, so the detectors read each one.",
        "",
        "| spans/request | content | body KiB | requests | spans acked | acked spans/s | stored during load "
        "| drain s | stored spans/s (end to end) | vs 20k/s | spans stored | ack p50 ms | ack p99 ms "
        "| ack -> stored, worst s | detection backlog, worst spans | outputs sampled | collector CPU "
        "| collector RSS MiB | client CPU | failed |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        e2e = r.stored_per_s
        check = "" if r.spans_stored == r.spans_acked else " (MISMATCH)"
        lines.append(
            f"| {r.batch:,} | {'yes' if r.content else 'no'} | {r.body_bytes / 1024:.0f} | {r.requests_ok:,} | "
            f"{r.spans_acked:,} | "
            f"{r.acked_per_s:,.0f} | {'n/a' if r.stored_during_load is None else f'{r.stored_during_load:,}'} | "
            f"{'timeout' if r.drain_s is None else f'{r.drain_s:.1f}'} | "
            f"{'n/a' if e2e is None else f'{e2e:,.0f}'} | "
            f"{(e2e or 0) / TARGET_SPANS_PER_S:.0%} | {r.spans_stored:,}{check} | "
            f"{r.latency_ms(0.50):.0f} | {r.latency_ms(0.99):.0f} | {r.max_spool_age_s:.1f} | "
            f"{r.max_backlog:,} | {_sampled([r])} | {r.collector_cpu_s / r.load_s:.0%} | {r.max_rss_mib:,.0f} | "
            f"{r.client_cpu_s / r.load_s:.0%} | {r.requests_failed} |"
        )
    return "\n".join(lines)


def format_cpu(results: list[IngestResult]) -> str:
    """Where the collector's CPU went during each load, in cores and µs per acknowledged span."""
    lines = [
        "| spans/request | content | " + " | ".join(CPU_PLACES) + " | client |",
        "|---:|---|" + "---:|" * (len(CPU_PLACES) + 1),
    ]
    for r in results:
        rate = r.acked_per_s
        cells = [f"{r.cpu_by_place[p]:.0%} ({r.cpu_by_place[p] / rate * 1e6:.0f} µs)" for p in CPU_PLACES]
        client = r.client_cpu_s / r.load_s
        cells.append(f"{client:.0%} ({client / rate * 1e6:.0f} µs)")
        lines.append(f"| {r.batch:,} | {'yes' if r.content else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Collector OTLP ingest throughput.")
    parser.add_argument("--quick", action="store_true", help="a few seconds per batch size")
    parser.add_argument("--batch", type=int, action="append",
                        help="spans per request (repeatable); default 512, the target load")
    parser.add_argument("--decode-workers", type=int, help="passed to the collector (default: its own)")
    parser.add_argument("--content", choices=("no", "yes", "both"), default="both",
                        help="spans without content, with content, or one load of each (default)")
    parser.add_argument("--rounds", type=int, default=1, help="run each load this many times")
    parser.add_argument("--queryable", type=float, metavar="SPANS_PER_S",
                        help="only measure ack -> queryable at this paced rate of spans with content")
    parser.add_argument("--infersight", action="append",
                        help="the collector builds to compare, each an 'infersight' script (repeatable): "
                             "with --queryable, its latency; else the load with --content yes or no, in turns")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="with --queryable or --infersight: seconds of load per turn")
    args = parser.parse_args()
    if args.queryable:
        print(compare_queryable(args.infersight or [INFERSIGHT], args.queryable, args.seconds, args.rounds))
        return
    if args.infersight:
        print(compare_load(args.infersight, args.content != "no", args.seconds, args.rounds))
        return
    extra = () if args.decode_workers is None else ("--decode-workers", str(args.decode_workers))
    content = {"no": (False,), "yes": (True,), "both": (False, True)}[args.content]
    results = run(args.quick, tuple(args.batch or (512,)), content, collector_args=extra, rounds=args.rounds)
    print(format_table(results))
    print()
    print(format_cpu(results))
    print()
    print(format_stages(stage_costs(repeat=3 if args.quick else 10)))


if __name__ == "__main__":
    main()

"""The windowed detectors over the store: drift once an hour, cost loops and stuffing every minute.

The minute evaluator calls :meth:`WindowedRunner.run_all` (or :meth:`WindowedRunner.run` for
one project) with the time of this evaluation and of the previous one whose rows were stored.
The runner turns them into a *report window* ``[since - lag, now - lag)`` floored to the minute
(``lag`` leaves time for spans still in the collector's spool) and returns the ``detections``
rows of the findings that became known in it, in one batch per minute. Consecutive evaluations
tile time, so every finding is reported once, and each minute's batch is a pure function of the
stored data: a retry, or a longer window after a failed insert, yields the same batch with the
same dedup token, so the store drops the repeat.

* **Cost loops** read the calls of the report window plus ``2 x window`` before it (enough to
  know whether an earlier call already belonged to a loop). Only groups that could loop are
  fetched with their prompts: identical prompts to one model have identical input token
  counts, so ``llm_spans`` narrows the candidates before ``otel_traces`` is read.
* **Context stuffing** compares the report window's large inputs with each route's reference.
* **Drift** runs when the report window passes an hour boundary ``H``: the hour before ``H``
  against the ``reference`` period before that, per route, numbers and texts (prompts and
  outputs). Results are cached per project and hour.

Samples are deterministic: ``llm_spans`` rows are taken in ``cityHash64(span_id)`` order, and
texts from ten-minute blocks chosen by a hash of their start, so only those blocks of
``otel_traces`` are read rather than a whole week of attribute maps.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TypeVar

from ._base import check_param
from ._cost_loops import (
    ContextStuffingDetector,
    CostLoopDetector,
    LLMCall,
    SpanFinding,
    prompt_hash,
)
from ._drift import DriftReport, NumericDriftDetector
from ._fitted import check_duration, check_positive_int
from ._messages import messages_text
from ._row_time import row_time_text
from ._text_drift import TextDriftDetector, TextDriftReport

logger = logging.getLogger("infersight.detectors")
T = TypeVar("T")

_MINUTE_NS = 60 * 10**9
_BLOCK_S = 600  # text samples come from ten-minute blocks
_MAX_RANGES = 48  # beyond this many blocks, read the whole period instead
_ID_BATCH = 5000
_COLUMN = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")  # drift features are read as llm_spans columns
# Model calls only (kind 'llm', the span contract): other spans have no prompt/answer pair.
_SPANS = (
    "project = {project:String} AND ts >= fromUnixTimestamp64Nano({start:Int64})"
    " AND ts < fromUnixTimestamp64Nano({end:Int64}) AND status = 'ok'"
    " AND kind = 'llm'"
)
_CALL_COLUMNS = (
    "trace_id, span_id, toUnixTimestamp64Nano(ts) AS ts_ns, tenant, user_id, route, model, provider,"
    " service, input_tokens, output_tokens, cost_usd, duration_s"
)


class QueryStore(Protocol):
    """What the runner needs of a store: ``query`` as :class:`infersight.collector.Store` has it.

    Blocking; may raise the store's error, which the runner lets through.
    """

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...


DriftResult = tuple[str, "DriftReport | TextDriftReport"]


@dataclass(frozen=True)
class WindowedBatch:
    """The rows of one project whose findings became known in one minute.

    Attributes:
        minute: the start of that minute (UTC).
        rows: ``detections`` rows (pass them through ``encode_rows``), in a deterministic order.
        dedup_token: lowercase hex from the project and the minute: a window that covers the
            minute again (a retry, a longer catch-up window) yields the same rows and token,
            so the store drops the repeat.
    """

    minute: datetime
    rows: list[dict[str, Any]]
    dedup_token: str


@dataclass(frozen=True)
class WindowedRun:
    """What one run found for one project.

    Attributes:
        project: the project.
        start, end: the report window (UTC): findings known in ``[start, end)``.
        batches: the rows per minute of the window, minutes without findings left out; insert
            each with its own token.
        notes: what could not be judged and why ("route x: no verdict, 312 requests ...").
        drift: ``(route, report)`` for every drift evaluation in this run, verdicts or not.
        loop_cost_usd: the money of the looping calls reported in this run.
        stuffing_cost_usd: the money of the excess input tokens reported in this run.
    """

    project: str
    start: datetime
    end: datetime
    batches: list[WindowedBatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    drift: list[DriftResult] = field(default_factory=list)
    loop_cost_usd: float = 0.0
    stuffing_cost_usd: float = 0.0

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every batch's rows, oldest minute first."""
        return [row for batch in self.batches for row in batch.rows]


@dataclass
class _Hourly:
    boundary_ns: int
    reference: dict[str, dict[str, list[float]]]
    stuffing: dict[str, ContextStuffingDetector] = field(default_factory=dict)
    drift: tuple[list[dict[str, Any]], list[str], list[DriftResult]] | None = None


class WindowedRunner:
    """Runs drift, cost-loop and context-stuffing detection for the projects in a store.

    Args:
        store: where ``llm_spans`` and ``otel_traces`` are (only ``query`` is used).
        reference: the drift reference period, before the current one (7 days).
        current: the drift current period, which is also how often drift runs (1 hour).
        lag: how far behind the clock the report window ends, for spans still being stored.
        max_catchup: the longest report window; after a longer pause older minutes are skipped.
        max_reference_rows, max_current_rows: requests sampled per route for numeric drift and
            the stuffing reference.
        numeric, text, loops, stuffing: configured detectors to use (copied before fitting);
            None uses the defaults. The numeric detector's features are read as ``llm_spans``
            columns (``queue_wait_s`` and ``itl_p95_s`` work too). ``drift=False`` turns drift
            off (loops and stuffing only).

    Blocking (it queries the store) and not thread-safe: one evaluator thread calls it. It
    raises what the store raises; a detector that fails on odd data is logged and noted, and
    the other detectors still run.
    """

    def __init__(
        self,
        store: QueryStore,
        *,
        reference: timedelta = timedelta(days=7),
        current: timedelta = timedelta(hours=1),
        lag: timedelta = timedelta(minutes=1),
        max_catchup: timedelta = timedelta(hours=1),
        max_reference_rows: int = 20_000,
        max_current_rows: int = 20_000,
        numeric: NumericDriftDetector | None = None,
        text: TextDriftDetector | None = None,
        loops: CostLoopDetector | None = None,
        stuffing: ContextStuffingDetector | None = None,
        drift: bool = True,
    ) -> None:
        owner = type(self).__name__
        for name, value in (("reference", reference), ("current", current), ("max_catchup", max_catchup)):
            check_duration(owner, name, value)
        check_param(owner, "lag", lag, isinstance(lag, timedelta) and lag >= timedelta(0),
                    "a duration >= 0 (datetime.timedelta)")
        check_param(owner, "current", current, current % timedelta(minutes=1) == timedelta(0),
                    "a whole number of minutes")
        if numeric is not None:
            check_param(owner, "numeric", numeric,
                        all(_COLUMN.match(f) for f in numeric.features),
                        "a NumericDriftDetector whose features are llm_spans column names")
        check_positive_int(owner, "max_reference_rows", max_reference_rows)
        check_positive_int(owner, "max_current_rows", max_current_rows)
        self.store = store
        self.reference = reference
        self.current = current
        self.lag = lag
        self.max_catchup = max_catchup
        self.max_reference_rows = max_reference_rows
        self.max_current_rows = max_current_rows
        self.numeric = numeric or NumericDriftDetector()
        self.text = text or TextDriftDetector()
        self.loops = loops or CostLoopDetector()
        self.stuffing = stuffing or ContextStuffingDetector()
        self.drift = drift
        self._hourly: dict[str, dict[int, _Hourly]] = {}

    # -- public ------------------------------------------------------------------------------------

    def window(self, now: datetime, since: datetime | None = None) -> tuple[datetime, datetime]:
        """The report window for an evaluation at ``now`` whose previous one ran at ``since``."""
        end = _floor(_ns(now), _MINUTE_NS) - _td_ns(self.lag)
        start = end - _MINUTE_NS if since is None else _floor(_ns(since), _MINUTE_NS) - _td_ns(self.lag)
        start = min(max(start, end - _td_ns(self.max_catchup)), end)
        return _dt(start), _dt(end)

    def run_all(self, now: datetime, *, since: datetime | None = None) -> list[WindowedRun]:
        """:meth:`run` for every project with LLM calls in the window (or in a finished drift hour)."""
        start, end = (_ns(t) for t in self.window(now, since))
        if start >= end:
            return []
        boundaries = self._boundaries(start, end) if self.drift else []
        earliest = min([start] + [b - _td_ns(self.current) for b in boundaries])
        rows = self.store.query(
            "SELECT DISTINCT project FROM llm_spans WHERE ts >= fromUnixTimestamp64Nano({start:Int64})"
            " AND ts < fromUnixTimestamp64Nano({end:Int64}) ORDER BY project",
            {"start": earliest, "end": end},
        )
        return [self.run(row["project"], now, since=since) for row in rows]

    def run(self, project: str, now: datetime, *, since: datetime | None = None) -> WindowedRun:
        """Find what became known in the report window for ``project``; see the module docstring.

        Args:
            project: the project to examine.
            now: the time of this evaluation.
            since: the time of the previous evaluation whose rows were stored; None for the
                minute before ``now``.

        Returns:
            The rows for ``detections`` and what could not be judged.
        """
        start_dt, end_dt = self.window(now, since)
        start, end = _ns(start_dt), _ns(end_dt)
        if start >= end:
            return WindowedRun(project, start_dt, end_dt)
        by_minute: dict[int, list[dict[str, Any]]] = defaultdict(list)
        notes: list[str] = []
        drift: list[DriftResult] = []
        for boundary in self._boundaries(start, end) if self.drift else ():
            drift_rows, drift_notes, reports = self._drift(project, boundary)
            by_minute[boundary - _MINUTE_NS].extend(drift_rows)  # the evaluated period's last minute
            notes.extend(drift_notes)
            drift.extend(reports)
        findings = self._loop_findings(project, start, end, notes) + self._stuffing_findings(project, start, end, notes)
        findings.sort(key=lambda f: (f.known_at_ns, f.call.ts_ns, f.call.span_id, f.detection.label))
        for finding in findings:
            by_minute[_floor(finding.known_at_ns, _MINUTE_NS)].append(_span_row(project, finding))
        batches = [
            WindowedBatch(_dt(minute), by_minute[minute],
                          hashlib.sha256(f"windowed/{project}/{minute}".encode()).hexdigest()[:32])
            for minute in sorted(by_minute) if by_minute[minute]
        ]
        loop_usd = sum(f.cost_usd or 0.0 for f in findings if f.detection.detector == self.loops.name)
        stuffing_usd = sum(f.cost_usd or 0.0 for f in findings if f.detection.detector == self.stuffing.name)
        return WindowedRun(project, start_dt, end_dt, batches, notes, drift, loop_usd, stuffing_usd)

    # -- cost loops and stuffing -------------------------------------------------------------------------

    def _loop_findings(self, project: str, start: int, end: int, notes: list[str]) -> list[SpanFinding]:
        window = _td_ns(self.loops.window)
        lookback_start = start - 2 * window
        params = {"project": project, "start": lookback_start, "end": end,
                  "trace_min": self.loops.trace_min_calls, "tenant_min": self.loops.tenant_min_calls}
        candidates = self.store.query(
            f"SELECT {_CALL_COLUMNS} FROM llm_spans WHERE {_SPANS}"
            " AND ((trace_id, model, input_tokens) IN (SELECT trace_id, model, input_tokens FROM llm_spans"
            f"   WHERE {_SPANS} AND trace_id != '' GROUP BY trace_id, model, input_tokens"
            "   HAVING count() >= {trace_min:UInt32})"
            " OR (tenant, user_id, model, input_tokens) IN (SELECT tenant, user_id, model, input_tokens"
            f"   FROM llm_spans WHERE {_SPANS} GROUP BY tenant, user_id, model, input_tokens"
            "   HAVING count() >= {tenant_min:UInt32}))"
            " ORDER BY ts, span_id",
            params,
        )
        if not candidates:
            return []
        prompts = self._prompts(project, lookback_start, end, [r["span_id"] for r in candidates])
        calls = [_call(r, prompts.get((r["trace_id"], r["span_id"]), "")) for r in candidates]
        found = _guard(self.loops.name, notes, self.loops.detect, calls) or []
        return [f for f in found if start <= f.known_at_ns < end]

    def _prompts(self, project: str, start: int, end: int, span_ids: list[str]) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        unique = sorted(set(span_ids))
        for i in range(0, len(unique), _ID_BATCH):
            rows = self.store.query(
                "SELECT TraceId AS trace_id, SpanId AS span_id,"
                " SpanAttributes['gen_ai.input.messages'] AS messages FROM otel_traces"
                " WHERE Timestamp >= fromUnixTimestamp64Nano({start:Int64})"
                " AND Timestamp < fromUnixTimestamp64Nano({end:Int64})"
                " AND ResourceAttributes['infersight.project'] = {project:String}"
                # Span ids are hex: a comma-joined String binds the same on chDB and a server.
                " AND has(splitByChar(',', {ids:String}), SpanId)",
                {"project": project, "start": start, "end": end, "ids": ",".join(unique[i:i + _ID_BATCH])},
            )
            for row in rows:
                out[(row["trace_id"], row["span_id"])] = prompt_hash(row["messages"])
        return out

    def _stuffing_findings(self, project: str, start: int, end: int, notes: list[str]) -> list[SpanFinding]:
        rows = self.store.query(
            f"SELECT {_CALL_COLUMNS} FROM llm_spans WHERE {_SPANS} AND input_tokens >= {{min_tokens:UInt64}}"
            " ORDER BY ts, span_id",
            {"project": project, "start": start, "end": end,
             "min_tokens": self.stuffing.min_tokens},
        )
        if not rows:
            return []
        # Each call is judged against the reference of its own period, so a minute gets the same
        # answer whichever window it is read in.
        period = _td_ns(self.current)
        groups: dict[tuple[int, str], list[LLMCall]] = defaultdict(list)
        for row in rows:
            call = _call(row, "")
            groups[(_floor(call.ts_ns, period), call.route)].append(call)
        found: list[SpanFinding] = []
        for (boundary, route), calls in sorted(groups.items()):
            hourly = self._hour(project, boundary)
            detector = hourly.stuffing.get(route)
            if detector is None:
                detector = copy.copy(self.stuffing).fit(hourly.reference.get(route, {}).get("input_tokens", []))
                hourly.stuffing[route] = detector
            if math.isinf(detector.threshold_):
                notes.append(f"{detector.name} route {route!r}: no verdict, {detector.n_reference_:,} "
                             f"reference calls, at least {detector.min_samples:,} needed")
                continue
            found.extend(detector.detect(calls))
        return found

    # -- drift ------------------------------------------------------------------------------------------

    def _boundaries(self, start: int, end: int) -> list[int]:
        """The ends of drift periods inside ``(start, end]``, oldest first."""
        period = _td_ns(self.current)
        return list(range(_floor(end, period), start, -period))[::-1]

    def _hour(self, project: str, boundary: int) -> _Hourly:
        """The reference sample (and what was learned from it) for the period ending at ``boundary``.

        Kept for the two latest periods of each project: a window that crosses a period's end
        needs both.
        """
        cached = self._hourly.setdefault(project, {})
        if boundary not in cached:
            current = _td_ns(self.current)
            reference = self._numbers(project, boundary - current - _td_ns(self.reference),
                                      boundary - current, self.max_reference_rows)
            cached[boundary] = _Hourly(boundary, reference)
            for old in sorted(cached)[:-2]:
                del cached[old]
        return cached[boundary]

    def _drift(self, project: str, boundary: int) -> tuple[list[dict[str, Any]], list[str], list[DriftResult]]:
        hourly = self._hour(project, boundary)
        if hourly.drift is None:
            hourly.drift = self._evaluate_drift(project, boundary, hourly.reference)
        return hourly.drift

    def _evaluate_drift(
        self, project: str, boundary: int, reference: dict[str, dict[str, list[float]]]
    ) -> tuple[list[dict[str, Any]], list[str], list[DriftResult]]:
        period = _td_ns(self.current)
        cur_start = boundary - period
        ref_start = cur_start - _td_ns(self.reference)
        current = self._numbers(project, cur_start, boundary, self.max_current_rows)
        rows: list[dict[str, Any]] = []
        notes: list[str] = []
        reports: list[DriftResult] = []
        hour = _dt(cur_start).strftime("%Y-%m-%d %H:%M")

        def add(route: str, report: DriftReport | TextDriftReport) -> None:
            reports.append((route, report))
            if report.drifted is None:
                notes.append(f"{report.detector} route {route!r} {hour}: {report.reason}")
            for d in report.detections():
                rows.append({
                    "project": project, "ts": row_time_text(cur_start), "trace_id": "", "span_id": "", "service": "",
                    "tenant": "", "route": route, "model": "", "detector": d.detector, "version": d.version,
                    "label": d.label, "score": d.score, "evidence": d.evidence,
                })

        for route in sorted(current):
            numeric = _guard(f"{self.numeric.name} route {route!r}", notes,
                             self._numeric_report, reference.get(route, {}), current[route])
            if numeric is None:
                continue
            add(route, numeric)
            if numeric.drifted is None:
                continue  # too few requests for numbers means too few texts as well
            ref_texts = self._texts(project, route, ref_start, cur_start)
            cur_texts = self._texts(project, route, cur_start, boundary)
            for channel, index in (("prompts", 0), ("outputs", 1)):
                report = _guard(f"{self.text.name} route {route!r} {channel}", notes, self._text_report,
                                [t[index] for t in ref_texts], [t[index] for t in cur_texts], channel)
                if report is not None:
                    add(route, report)
        return rows, notes, reports

    def _numeric_report(self, reference: dict[str, list[float]], current: dict[str, list[float]]) -> DriftReport:
        return copy.copy(self.numeric).fit(reference).detect(current)

    def _text_report(self, reference: list[str], current: list[str], channel: str) -> TextDriftReport:
        return copy.copy(self.text).fit(reference).detect(current, channel=channel)

    def _numbers(self, project: str, start: int, end: int, limit: int) -> dict[str, dict[str, list[float]]]:
        """Per route, a deterministic sample of the drift features and input tokens (column -> values)."""
        features = list(dict.fromkeys(["input_tokens", *self.numeric.features]))
        rows = self.store.query(
            f"SELECT route, {', '.join(features)} FROM llm_spans WHERE {_SPANS}"
            " ORDER BY route, cityHash64(span_id), span_id LIMIT {limit:UInt64} BY route",
            {"project": project, "start": start, "end": end, "limit": limit},
        )
        out: dict[str, dict[str, list[float]]] = {}
        for row in rows:
            columns = out.setdefault(row["route"], {f: [] for f in features})
            for feature in features:
                columns[feature].append(_float(row[feature]))
        return out

    def _texts(self, project: str, route: str, start: int, end: int) -> list[tuple[str, str]]:
        """(prompt, output) texts of a deterministic sample of the route's calls in the period."""
        target = 2 * self.text.max_samples
        blocks = self.store.query(
            f"SELECT intDiv(toUnixTimestamp(ts), {_BLOCK_S}) AS block, count() AS n FROM llm_spans"
            f" WHERE {_SPANS} AND route = {{route:String}} GROUP BY block ORDER BY block",
            {"project": project, "start": start, "end": end, "route": route},
        )
        order = sorted(blocks, key=lambda b: hashlib.sha256(f"{project}/{route}/{b['block']}".encode()).digest())
        chosen, total = [], 0
        for block in order:
            if total >= target:
                break
            chosen.append(int(block["block"]))
            total += int(block["n"])
        if not chosen:
            return []
        ranges = [(start, end)] if len(chosen) > _MAX_RANGES else _merge(chosen, start, end)
        params: dict[str, Any] = {"project": project, "route": route, "limit": target}
        clauses = []
        for i, (lo, hi) in enumerate(ranges):
            params[f"lo{i}"], params[f"hi{i}"] = lo, hi
            clauses.append(f"(Timestamp >= fromUnixTimestamp64Nano({{lo{i}:Int64}})"
                           f" AND Timestamp < fromUnixTimestamp64Nano({{hi{i}:Int64}}))")
        rows = self.store.query(
            "SELECT SpanAttributes['gen_ai.input.messages'] AS prompt,"
            " SpanAttributes['gen_ai.output.messages'] AS output FROM otel_traces"
            f" WHERE ({' OR '.join(clauses)})"
            " AND ResourceAttributes['infersight.project'] = {project:String}"
            " AND SpanAttributes['infersight.route'] = {route:String} AND StatusCode != 'Error'"
            " AND (mapContains(SpanAttributes, 'gen_ai.input.messages')"
            " OR mapContains(SpanAttributes, 'gen_ai.output.messages'))"
            " ORDER BY cityHash64(SpanId), SpanId LIMIT {limit:UInt64}",
            params,
        )
        return [(messages_text(r["prompt"]), messages_text(r["output"])) for r in rows]


def _guard(what: str, notes: list[str], compute: Callable[..., T], *args: Any) -> T | None:
    """``compute(*args)``, or None after logging and noting what failed."""
    try:
        return compute(*args)
    except Exception as exc:  # odd data in one route must not stop the other detectors
        logger.exception("%s failed", what)
        notes.append(f"{what}: failed ({type(exc).__name__}: {exc})")
        return None


def _merge(blocks: Sequence[int], start: int, end: int) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for block in sorted(blocks):
        lo = max(block * _BLOCK_S * 10**9, start)
        hi = min((block + 1) * _BLOCK_S * 10**9, end)
        if ranges and ranges[-1][1] >= lo:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], hi))
        else:
            ranges.append((lo, hi))
    return ranges


def _call(row: Mapping[str, Any], prompt: str) -> LLMCall:
    cost = row.get("cost_usd")
    return LLMCall(
        ts_ns=int(row["ts_ns"]), trace_id=row["trace_id"], span_id=row["span_id"], prompt_hash=prompt,
        tenant=row.get("tenant", ""), user_id=row.get("user_id", ""), route=row.get("route", ""),
        model=row.get("model", ""), provider=row.get("provider", ""), service=row.get("service", ""),
        input_tokens=int(row.get("input_tokens") or 0), output_tokens=int(row.get("output_tokens") or 0),
        cost_usd=None if cost is None else float(cost), duration_s=float(row.get("duration_s") or 0.0),
    )


def _span_row(project: str, finding: SpanFinding) -> dict[str, Any]:
    call, d = finding.call, finding.detection
    return {
        "project": project, "ts": row_time_text(call.ts_ns), "trace_id": call.trace_id, "span_id": call.span_id,
        "service": call.service, "tenant": call.tenant, "route": call.route, "model": call.model,
        "detector": d.detector, "version": d.version, "label": d.label, "score": d.score, "evidence": d.evidence,
    }


def _float(value: Any) -> float:
    # ClickHouse's JSON quotes 64-bit integers; Nullable columns give null.
    return math.nan if value is None else float(value)


def _ns(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _dt(ns: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ns // 1000)


def _td_ns(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _floor(ns: int, unit: int) -> int:
    return ns - ns % unit

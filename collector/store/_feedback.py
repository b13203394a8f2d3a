"""Feedback on traces and spans: a user's thumbs or a score, given by the app (SDK or API) or on
the trace page, stored append-only in ``feedback`` (``sql/080_feedback.sql``).

Feedback is the caller's: every row is stamped with the project of the key that posted it, and
every read is filtered by the reader's project, so feedback naming another project's trace is
stored under the poster's project and never seen by the trace's owner. It may arrive before its
trace (the SDK sends it while the trace's spans are still queued), so it is never refused for a
trace not stored yet.

Compared only like with like: thumbs (1 up, 0 down) and scores are grouped by (name, kind) and
never averaged together, nor into judge scores.
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from infersight.detectors import row_time_text

from ..errors import BadRequest
from ._base import Store, encode_rows
from ._checks import check_text
from ._time import shown

THUMBS = "thumbs"
SCORE = "score"
KINDS = (THUMBS, SCORE)
THUMB_VALUES = {"up": 1.0, "down": 0.0}
SOURCES = ("api", "sdk", "dashboard")
DEFAULT_NAME = "user_feedback"
MAX_ITEMS = 1000
COMMENT_MAX_CHARS = 4096
_TRACE_ID = re.compile(r"^[0-9a-f]{16,64}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_FIELDS = frozenset({"id", "trace_id", "span_id", "name", "score", "thumbs", "comment", "user_id"})
# Newest first, each id once: a client that re-sends a batch (the SDK after a lost answer) gives
# its ids again, and an append-only table keeps both copies.
_COLUMNS = ("id, toUnixTimestamp64Milli(ts) AS ts_ms, trace_id, span_id, name, kind, value, comment,"
            " source, created_by")


def feedback_rows(payload: object, project: str, *, now_ns: int, source: str = "api") -> list[dict[str, Any]]:
    """The ``feedback`` rows of a posted ``payload`` (one object or a list of them), for ``project``.

    Each object has ``trace_id`` (hex), optionally ``span_id`` (16 hex digits, a span of that
    trace), exactly one of ``score`` (a finite number) or ``thumbs`` (``"up"``/``"down"``),
    optionally ``name`` (default ``user_feedback``), ``comment``, ``user_id`` (who gave it) and
    ``id`` (the client's, so a re-sent item is shown once). Raises :class:`BadRequest` naming the
    first unusable item and field; nothing is stored then.
    """
    if source not in SOURCES:
        raise ValueError(f"The 'source' parameter of feedback_rows must be one of {SOURCES}; got {source!r}.")
    items = payload if isinstance(payload, list) else [payload]
    if not items:
        raise BadRequest("The feedback must be one object or a non-empty list of them; got an empty list.")
    if len(items) > MAX_ITEMS:
        raise BadRequest(f"At most {MAX_ITEMS} feedback items fit one request; got {len(items)}.")
    single = not isinstance(payload, list)
    return [_row(item, "" if single else f"item {i}: ", project, now_ns, source) for i, item in enumerate(items)]


def _row(item: object, where: str, project: str, now_ns: int, source: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise BadRequest(f"{where}feedback must be a JSON object; got {type(item).__name__}.")
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise BadRequest(f"{where}unknown field {shown(unknown[0])}; the fields are {', '.join(sorted(_FIELDS))}.")
    trace_id = _required_trace(item, where)
    kind, value = _value(item, where)
    return {
        "project": project,
        "id": _matching(item, "id", _ID, where, "1-64 letters, digits or _.:-") or uuid.uuid4().hex,
        "ts": row_time_text(now_ns),
        "trace_id": trace_id,
        "span_id": _matching(item, "span_id", _SPAN_ID, where, "16 hex digits") or "",
        "name": _matching(item, "name", _NAME, where, "1-64 letters, digits or _.:-") or DEFAULT_NAME,
        "kind": kind,
        "value": value,
        "comment": _text(item, "comment", where, COMMENT_MAX_CHARS),
        "source": source,
        "created_by": _text(item, "user_id", where, 256),
    }


def _required_trace(item: Mapping[str, Any], where: str) -> str:
    trace_id = _matching(item, "trace_id", _TRACE_ID, where, "16 to 64 hex digits")
    if trace_id is None:
        raise BadRequest(f"{where}'trace_id' is required: the trace the feedback is about.")
    return trace_id


def _matching(item: Mapping[str, Any], field: str, pattern: re.Pattern[str], where: str, what: str) -> str | None:
    value = item.get(field)
    if value is None or value == "":
        return None
    text = value.strip().lower() if isinstance(value, str) and field.endswith("_id") and field != "id" else value
    if not isinstance(text, str) or not pattern.match(text):
        raise BadRequest(f"{where}'{field}' must be {what}; got {shown(str(value))}.")
    return text


def _value(item: Mapping[str, Any], where: str) -> tuple[str, float]:
    score, thumbs = item.get("score"), item.get("thumbs")
    if (score is None) == (thumbs is None):
        raise BadRequest(f"{where}give exactly one of 'score' (a number) or 'thumbs' ('up' or 'down').")
    if thumbs is not None:
        if thumbs not in THUMB_VALUES:
            raise BadRequest(f"{where}'thumbs' must be 'up' or 'down'; got {shown(str(thumbs))}.")
        return THUMBS, THUMB_VALUES[thumbs]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise BadRequest(f"{where}'score' must be a finite number; got {shown(str(score))}.")
    return SCORE, float(score)


def _text(item: Mapping[str, Any], field: str, where: str, max_chars: int) -> str:
    value = item.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{where}'{field}' must be a string; got {type(value).__name__}.")
    if field == "comment":  # free text: line breaks and tabs are part of it
        if len(value) > max_chars:
            raise BadRequest(f"{where}'comment' must be at most {max_chars} characters; got {len(value)}.")
        return value
    try:
        return check_text(field, value, max_chars=max_chars) or ""
    except BadRequest as exc:
        raise BadRequest(f"{where}{exc}") from None


def insert_feedback(store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
    """Store ``rows`` (from :func:`feedback_rows`) as one insert whose token is their hash, so a
    request retried after a lost answer is stored once. Blocks; raises ``StoreError``."""
    body = encode_rows(rows)
    store.insert("feedback", body, dedup_token=hashlib.sha256(body).hexdigest())


def distinct_feedback(where: str) -> str:
    """The feedback rows matching ``where`` (SQL over the table's columns, values bound), each id
    once: the SDK re-sends an item whose answer was lost, with the same id. Every reader counts
    feedback through this subquery."""
    return f"(SELECT * FROM feedback WHERE {where} ORDER BY ts DESC LIMIT 1 BY id)"


def trace_feedback(store: Store, project: str, trace_id: str) -> list[dict[str, Any]]:
    """The feedback of ``project`` on one trace and its spans, oldest first; each row has ``id``,
    ``ts_ms``, ``trace_id``, ``span_id`` (empty for the trace), ``name``, ``kind``, ``value``,
    ``comment``, ``source``, ``created_by`` and ``shown`` (``up``/``down`` or the score)."""
    rows = store.query(
        f"SELECT {_COLUMNS} FROM {distinct_feedback('project = {project:String} AND trace_id = {trace_id:String}')}"
        " ORDER BY ts DESC",
        {"project": project, "trace_id": trace_id},
    )
    return [row | {"shown": shown_value(row["kind"], row["value"])} for row in reversed(rows)]


def shown_value(kind: str, value: float) -> str:
    """How one feedback value reads: ``up``/``down`` for thumbs, the number for a score."""
    if kind == THUMBS:
        return "up" if value >= 0.5 else "down"
    return f"{value:g}"


def feedback_series(store: Store, project: str, start_ns: int, end_ns: int, bucket_s: int) -> list[dict[str, Any]]:
    """Feedback of ``project`` between the two times per ``bucket_s`` seconds and (name, kind):
    ``bucket`` (Unix seconds), ``name``, ``kind``, ``count``, ``mean`` (for thumbs, the share up)
    and ``negative`` (thumbs down; scores have no sign of their own, so 0)."""
    return store.query(
        "SELECT toUnixTimestamp(toStartOfInterval(toDateTime(ts, 'UTC'), INTERVAL {bucket:UInt32} SECOND)) AS bucket,"
        " name, kind, count() AS count, avg(value) AS mean,"
        " countIf(kind = {thumbs:String} AND value < 0.5) AS negative"
        " FROM " + distinct_feedback("project = {project:String} AND ts >= fromUnixTimestamp64Nano({start:Int64})"
                                     " AND ts < fromUnixTimestamp64Nano({end:Int64})")
        + " GROUP BY bucket, name, kind ORDER BY bucket, name, kind",
        {"project": project, "start": start_ns, "end": end_ns, "bucket": bucket_s, "thumbs": THUMBS},
    )


def negative_feedback_traces(store: Store, project: str, start_ns: int, end_ns: int) -> list[str]:
    """Trace ids of ``project`` given a thumbs down between the two times, most recent first."""
    rows = store.query(
        "SELECT trace_id, max(ts) AS last FROM feedback WHERE project = {project:String}"
        " AND kind = {thumbs:String} AND value < 0.5"
        " AND ts >= fromUnixTimestamp64Nano({start:Int64}) AND ts < fromUnixTimestamp64Nano({end:Int64})"
        " GROUP BY trace_id ORDER BY last DESC, trace_id",
        {"project": project, "start": start_ns, "end": end_ns, "thumbs": THUMBS},
    )
    return [row["trace_id"] for row in rows]


JUDGE_PASS_SCORE = 3  # on the judges' 1..5 scale; 2 and below is "bad" on the Quality page
_JUDGE_LEAD_NS = 7 * 86400 * 10**9  # feedback comes after its call: judge rows up to a week older


def feedback_judge_agreement(
    store: Store, project: str, start_ns: int, end_ns: int, *, pass_score: int = JUDGE_PASS_SCORE
) -> list[dict[str, Any]]:
    """Where a trace of ``project`` got thumbs between the two times and a judge score, how the
    user's verdict and the judge's compare, per (feedback name, judge model, rubric, version).

    Like with like only: a trace's thumbs under one name are its users' verdict (the majority;
    a tie says nothing and is left out), a judge passes the trace when its mean score there is at
    least ``pass_score``; scores of kind ``score`` are not compared. Each row has ``traces``,
    ``pass_up``, ``pass_down``, ``fail_up``, ``fail_down`` and ``agreement`` (the share of traces
    where both say the same).
    """
    window = ("project = {project:String} AND kind = {thumbs:String}"
              " AND ts >= fromUnixTimestamp64Nano({start:Int64}) AND ts < fromUnixTimestamp64Nano({end:Int64})")
    rows = store.query(
        "SELECT f.name AS name, j.judge_model AS judge_model, j.rubric_id AS rubric_id,"
        " j.rubric_version AS rubric_version, count() AS traces,"
        " countIf(j.passed AND f.up) AS pass_up, countIf(j.passed AND NOT f.up) AS pass_down,"
        " countIf(NOT j.passed AND f.up) AS fail_up, countIf(NOT j.passed AND NOT f.up) AS fail_down"
        " FROM (SELECT trace_id, name, avg(value) > 0.5 AS up FROM"
        f" {distinct_feedback(window)}"
        " GROUP BY trace_id, name HAVING avg(value) != 0.5) AS f"
        " INNER JOIN (SELECT trace_id, judge_model, rubric_id, rubric_version, avg(score) >= {pass:Float64} AS passed"
        " FROM judge_scores WHERE project = {project:String}"
        " AND ts >= fromUnixTimestamp64Nano({judged_from:Int64}) AND ts < fromUnixTimestamp64Nano({end:Int64})"
        f" AND trace_id IN (SELECT trace_id FROM feedback WHERE {window})"
        " GROUP BY trace_id, judge_model, rubric_id, rubric_version) AS j ON f.trace_id = j.trace_id"
        " GROUP BY name, judge_model, rubric_id, rubric_version"
        " ORDER BY name, judge_model, rubric_id, rubric_version",
        {"project": project, "thumbs": THUMBS, "start": start_ns, "end": end_ns, "pass": float(pass_score),
         "judged_from": max(start_ns - _JUDGE_LEAD_NS, 0)},
    )
    for row in rows:
        counts = {key: int(row[key]) for key in ("traces", "pass_up", "pass_down", "fail_up", "fail_down")}
        row.update(counts, rubric_version=int(row["rubric_version"]))
        row["agreement"] = (counts["pass_up"] + counts["fail_down"]) / counts["traces"]
    return rows

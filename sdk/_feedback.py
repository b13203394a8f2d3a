"""Users' feedback on a traced call, sent to the collector the spans go to, off the app's thread.

:func:`feedback` checks its arguments, puts one item on a bounded queue and returns: it never
blocks and never raises. A daemon thread posts the queue in batches to ``/api/v1/feedback``
with the SDK's key. A collector that cannot be reached, or answers 429/5xx, is tried again
(1 s, doubling to 30 s) with the same item ids, which the collector shows once; a refusal of
the items themselves (any other 4xx) drops them. What is dropped, by a full queue, a refusal,
a bad argument or the exit, is counted in ``failure_count("feedback_dropped")`` and logged once.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import os
import re
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

from ._guard import count, first_time, logger, plain_text, record_failure

FEEDBACK_DROPPED = "feedback_dropped"
MAX_QUEUED = 10_000  # what a collector outage may hold back; the app's memory is not ours
BATCH = 500  # below the collector's 1000 items per request
BATCH_BYTES = 512 * 1024  # half the collector's 1 MiB body limit: a batch of long comments still fits
COMMENT_MAX_CHARS = 4096  # the collector's limit: longer comments are cut, not refused
USER_ID_MAX_CHARS = 256
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")  # the collector's rule for names
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 10.0
_RETRY_FIRST_S, _RETRY_MAX_S = 1.0, 30.0
_THUMBS = {"up": "up", "down": "down", True: "up", False: "down"}


def current_trace_id() -> str | None:
    """The id of the trace the current call belongs to (32 lowercase hex digits), for
    :func:`feedback` later; ``None`` outside a traced call or before ``init``. Never raises."""
    try:
        context = trace.get_current_span().get_span_context()
        return f"{context.trace_id:032x}" if context.is_valid else None
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("current_trace_id", exc)
        return None


def feedback(
    trace_id: str | int | None = None,
    *,
    span_id: str | int | None = None,
    score: float | None = None,
    thumbs: str | bool | None = None,
    name: str | None = None,
    comment: str | None = None,
    user_id: str | None = None,
) -> str | None:
    """Record a user's feedback on a trace (or one of its spans) and return its id at once.

    Args:
        trace_id: the trace, as :func:`current_trace_id` gave it (or an OpenTelemetry int);
            defaults to the current call's trace.
        span_id: one span of that trace, when the feedback is about it alone.
        score: a number (say 1-5 stars), or
        thumbs: ``"up"``/``"down"`` (or True/False); exactly one of the two.
        name: what is rated, e.g. ``"user_rating"`` (default ``user_feedback``); values are
            compared only within one name and kind.
        comment: the user's words, if any.
        user_id: who gave it.

    Returns the feedback's id, or ``None`` when it was dropped (no ``init``, an unusable
    argument, a full queue: counted in ``failure_count("feedback_dropped")``). Never blocks,
    never raises; the item is sent on a background thread.
    """
    try:
        item = _item(trace_id, span_id, score, thumbs, name, comment, user_id)
    except ValueError as exc:
        _dropped(1, f"feedback() {exc}")
        return None
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("feedback", exc)
        return None
    sender = _sender
    if sender is None:
        _dropped(1, "there is no collector to send it to: init() was not called, was called with export=False, "
                    "or shutdown() ran")
        return None
    return item["id"] if sender.put(item) else None


def _item(
    trace_id: str | int | None, span_id: str | int | None, score: float | None, thumbs: str | bool | None,
    name: str | None, comment: str | None, user_id: str | None,
) -> dict[str, Any]:
    trace_hex = _hex_id(trace_id, 32) if trace_id is not None else current_trace_id()
    if trace_hex is None:
        raise ValueError("needs a trace_id: none was given and no traced call is running")
    if (score is None) == (thumbs is None):
        raise ValueError("takes exactly one of score= (a number) or thumbs= ('up' or 'down')")
    item: dict[str, Any] = {"id": uuid.uuid4().hex, "trace_id": trace_hex}
    if thumbs is not None:
        if thumbs not in _THUMBS:
            raise ValueError(f"thumbs= must be 'up' or 'down'; got {thumbs!r}")
        item["thumbs"] = _THUMBS[thumbs]
    else:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise ValueError(f"score= must be a finite number; got {score!r}")
        item["score"] = float(score)
    if span_id is not None:
        item["span_id"] = _hex_id(span_id, 16)
    # Checked here as the collector checks them: one unusable item would cost its whole batch.
    text = plain_text(name, "feedback")
    if text:
        if not _NAME.match(text):
            raise ValueError(f"name= must be 1-64 letters, digits or _.:-; got {text!r:.80}")
        item["name"] = text
    text = plain_text(comment, "feedback")
    if text:
        item["comment"] = text[:COMMENT_MAX_CHARS]
    text = plain_text(user_id, "feedback")
    if text:
        if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
            raise ValueError(f"user_id= must not contain control characters; got {text!r:.80}")
        item["user_id"] = text[:USER_ID_MAX_CHARS]
    return item


def _hex_id(value: str | int, digits: int) -> str:
    """An id as the collector stores it; a trace id may be 16 to 32 digits (64 for other tracers)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return f"{value:0{digits}x}"
    text = value.strip().lower() if type(value) is str else ""
    shortest, longest = (16, 64) if digits == 32 else (16, 16)
    if not shortest <= len(text) <= longest or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"ids must be {shortest}-{longest} hex digits or an int; got {value!r:.80}")
    return text


def _dropped(n: int, why: str) -> None:
    if count(FEEDBACK_DROPPED, n):
        logger.warning("infersight: feedback dropped: %s. Counted in failure_count(%r); further drops are "
                       "counted, not logged.", why, FEEDBACK_DROPPED)


class FeedbackSender:
    """A bounded queue of feedback items and the daemon thread that posts it to ``url``.

    :meth:`put` may be called from any thread and never blocks; :meth:`stop` blocks for at most
    its bound.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, *, max_queued: int = MAX_QUEUED) -> None:
        import requests
        from opentelemetry.util.re import parse_env_headers

        self.url = url
        env = os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
        self._headers = {k.lower(): v for k, v in parse_env_headers(env, liberal=True).items()}
        self._headers.update({k.lower(): v for k, v in (headers or {}).items()})
        self._headers.update({"content-type": "application/json", "x-infersight-source": "sdk"})
        self._session = requests.Session()
        self._max_queued = max_queued
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._failing = False  # the latest attempt failed: stop() does not wait on this collector
        self._thread: threading.Thread | None = None

    def put(self, item: dict[str, Any]) -> bool:
        """Queue ``item``; False (counted as dropped) when the queue is full or stopped."""
        with self._wake:
            if self._stopping or len(self._queue) >= self._max_queued:
                full = not self._stopping
            else:
                self._queue.append(item)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="infersight-feedback", daemon=True)
                    self._thread.start()
                self._wake.notify()
                return True
        _dropped(1, f"the queue holds {self._max_queued} items already" if full else "the SDK is shutting down")
        return False

    def stop(self, timeout_s: float) -> None:
        """Send what is queued for at most ``timeout_s`` (none when the collector is failing),
        then count the rest as dropped. Never raises."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
            thread = self._thread
        if thread is not None and not self._failing:
            thread.join(max(timeout_s, 0.0))
        with self._wake:
            left = len(self._queue)
            self._queue.clear()
        if left:
            _dropped(left, "the process stopped before the collector took them")
        self._session.close()

    def _run(self) -> None:
        wait_s = _RETRY_FIRST_S
        while True:
            with self._wake:
                while not self._queue and not self._stopping:
                    self._wake.wait()
                if not self._queue:
                    return
                head = list(itertools.islice(self._queue, BATCH))
            batch, body = _batch(head)  # encoded off the lock: put() never waits on it
            outcome = self._post(batch, body)
            if outcome != "retry":
                with self._wake:
                    for _ in batch:
                        if self._queue:  # stop() may have emptied it meanwhile
                            self._queue.popleft()
                wait_s = _RETRY_FIRST_S
                continue
            with self._wake:
                if self._stopping:
                    return
                self._wake.wait(wait_s)  # stop() wakes it: nothing is retried once the app exits
            wait_s = min(wait_s * 2, _RETRY_MAX_S)

    def _post(self, batch: list[dict[str, Any]], body: bytes) -> str:
        """``sent``, ``refused`` (dropped, counted) or ``retry``."""
        try:
            response = self._session.post(self.url, data=body, headers=self._headers,
                                          timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))
        except Exception as exc:  # noqa: BLE001 - any transport failure is a retry, never the app's
            self._failing = True
            if first_time("feedback_unsent"):
                logger.warning("infersight: feedback not sent yet, will retry: %s", f"{exc!r}"[:300])
            return "retry"
        status = response.status_code
        detail = response.text[:300]
        response.close()
        self._failing = not 200 <= status < 300
        if 200 <= status < 300:
            return "sent"
        if status in (408, 429) or status >= 500:
            return "retry"
        _dropped(len(batch), f"the collector refused them ({status}): {detail}")
        return "refused"


def _batch(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bytes]:
    """The first of ``items`` (at least one) up to :data:`BATCH_BYTES`, and their JSON body."""
    batch: list[dict[str, Any]] = []
    parts: list[bytes] = []
    size = 2
    for item in items:
        encoded = json.dumps(item, ensure_ascii=False).encode("utf-8", "replace")
        if batch and size + len(encoded) + 1 > BATCH_BYTES:
            break
        batch.append(item)
        parts.append(encoded)
        size += len(encoded) + 1
    return batch, b"[" + b",".join(parts) + b"]"


_sender: FeedbackSender | None = None
_lock = threading.Lock()


def configure(url: str, headers: Mapping[str, str] | None) -> None:
    """Send feedback to ``url`` from now on (``init``). Never raises."""
    global _sender
    try:
        sender = FeedbackSender(url, headers)
    except Exception as exc:  # noqa: BLE001 - a bad setting must not take the app down
        record_failure("feedback setup", exc)
        return
    with _lock:
        _sender = sender


def stop(timeout_s: float) -> None:
    """Send what is queued within ``timeout_s`` and stop (``shutdown``). Never raises."""
    global _sender
    with _lock:
        sender, _sender = _sender, None
    if sender is None:
        return
    try:
        sender.stop(timeout_s)
    except Exception as exc:  # noqa: BLE001 - shutdown is best-effort
        record_failure("feedback shutdown", exc)

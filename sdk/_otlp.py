"""The OTLP/HTTP span exporter the SDK creates: one POST per batch, and what it came to.

The stock ``OTLPSpanExporter`` retries inside ``export`` (a read timeout counts as a
connection error there and is re-sent at once), so a batch a slow collector had in fact
accepted went out again: across a collector restart under load that stored 512 duplicate rows.
Here ``export`` makes exactly one attempt and records its :class:`~._outcome.Outcome`; the
export processor decides whether and when to try again (back-off, ``Retry-After``), and stops
at exit.

The timeouts: connecting to a live collector takes milliseconds, so 5 s only guards against an
address that drops packets. Reading the answer may take much longer once: a restarting collector
replays its spool before it answers, several seconds (the answers the old 5 s timeout gave up
on). 30 s covers that several times over; a collector that hangs for good costs one batch 30 s
of delay while the queue keeps filling. At exit nothing waits that long: the processor stops
waiting 0.5 s after the collector stops answering.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ._guard import FORBIDDEN, NOT_FOUND, UNAUTHORIZED, count, logger
from ._outcome import ANSWERED, FAILED, REFUSED, SENT, TIMED_OUT, UNREACHABLE, Outcome, retry_after_s

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0

_ADVICE = {
    401: (UNAUTHORIZED, "the collector refused the API key (401 Unauthorized). Pass a project key as "
                        "init(api_key=...) (create one with `infersight keys create --project NAME`), or run the "
                        "collector with --no-auth for development"),
    403: (FORBIDDEN, "the collector refused this key (403 Forbidden: revoked, or not allowed to write). Create "
                     "a new one with `infersight keys create --project NAME` and pass it as init(api_key=...)"),
    404: (NOT_FOUND, "nothing answers at this URL (404 Not Found). init(endpoint=...) must be the collector's "
                     "base URL, e.g. http://localhost:4318, without /v1/traces"),
}


class OtlpSender(SpanExporter):
    """Posts each batch once as OTLP/HTTP protobuf; :attr:`last` says how the latest attempt ended.

    Headers come from ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`` with ``headers`` on top, and a CA
    file from ``OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE``, as with the stock exporter. Called from
    one thread (the export thread); ``shutdown`` may come from another.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        import requests
        from opentelemetry.util.re import parse_env_headers

        self.url = url
        self.last = Outcome(SENT, url)
        # Called once a batch is encoded, as it goes on the wire: the processor's clock for
        # "the collector has not answered" starts there, not during the SDK's own CPU work.
        self.on_send: Callable[[], None] | None = None
        self._timeout = (connect_timeout_s, read_timeout_s)
        env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
        self._headers = {k.lower(): v for k, v in parse_env_headers(env, liberal=True).items()}
        self._headers.update({k.lower(): v for k, v in (headers or {}).items()})
        self._headers["content-type"] = "application/x-protobuf"
        self._session = requests.Session()
        ca_file = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE") or os.environ.get(
            "OTEL_EXPORTER_OTLP_CERTIFICATE")
        if ca_file:
            self._session.verify = ca_file

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.last = self._post(spans)
        return SpanExportResult.SUCCESS if self.last.sent else SpanExportResult.FAILURE

    def _post(self, spans: Sequence[ReadableSpan]) -> Outcome:
        import requests
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        try:
            body = encode_spans(spans).SerializePartialToString()
        except Exception as exc:  # noqa: BLE001 - a span that cannot be encoded fails its batch, not the thread
            return Outcome(FAILED, self.url, detail=f"could not encode the spans: {exc!r}")
        if self.on_send is not None:
            self.on_send()
        try:
            response = self._session.post(self.url, data=body, headers=self._headers, timeout=self._timeout)
        except requests.exceptions.Timeout:
            return Outcome(TIMED_OUT, self.url, detail=f"{self._timeout[1]:g} s")
        except requests.exceptions.ConnectionError as exc:
            if _caused_by(exc, ConnectionRefusedError):
                return Outcome(REFUSED, self.url)
            return Outcome(UNREACHABLE, self.url, detail=_short(exc))
        except Exception as exc:  # noqa: BLE001 - whatever the transport raises is this batch's failure
            return Outcome(UNREACHABLE, self.url, detail=_short(exc))
        status = response.status_code
        response.close()
        if 200 <= status < 300:
            return Outcome(SENT, self.url, status=status)
        _advise(status)
        wait_s = retry_after_s(response.headers.get("retry-after"))
        return Outcome(ANSWERED, self.url, status=status, retry_after_s=wait_s)

    def shutdown(self) -> None:
        self._session.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _advise(status: int) -> None:
    """A wrong key, a revoked one or a wrong URL: logged once each, saying what to change."""
    known = _ADVICE.get(status)
    if known is not None and count(known[0]):
        logger.warning("infersight: spans are dropped: %s. Counted in failure_count(%r).", known[1], known[0])


def _caused_by(exc: BaseException, kind: type[BaseException], depth: int = 8) -> bool:
    """Whether ``kind`` is somewhere in the chain requests and urllib3 wrap a socket error in."""
    seen: Any = exc
    for _ in range(depth):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        nested = getattr(seen, "reason", None) or seen.__cause__ or seen.__context__
        if nested is None and seen.args and isinstance(seen.args[0], BaseException):
            nested = seen.args[0]
        seen = nested
    return False


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]

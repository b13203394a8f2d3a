"""The OTLP/HTTP span exporter the SDK creates, with the collector's refusals made visible.

The stock exporter only logs a 401 like any other failure, batch after batch. A ``requests``
response hook (public API of both libraries) counts 401/403/404 by reason and logs each once,
saying what to change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._export import quiet_stock_exporter_logs
from ._guard import FORBIDDEN, NOT_FOUND, UNAUTHORIZED, count, logger

_ADVICE = {
    401: (UNAUTHORIZED, "the collector refused the API key (401 Unauthorized). Pass a project key as "
                        "init(api_key=...) (create one with `infersight keys create --project NAME`), or run the "
                        "collector with --no-auth for development"),
    403: (FORBIDDEN, "the collector refused this key (403 Forbidden: revoked, or not allowed to write). Create "
                     "a new one with `infersight keys create --project NAME` and pass it as init(api_key=...)"),
    404: (NOT_FOUND, "nothing answers at this URL (404 Not Found). init(endpoint=...) must be the collector's "
                     "base URL, e.g. http://localhost:4318, without /v1/traces"),
}
_STOCK_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


class _Answers:
    """Counts and logs the collector's refusals, and remembers whether the last answer refused
    the spans outright (a 4xx other than 408 and 429): sending the same spans again cannot help,
    where a refused connection or a 5xx can."""

    def __init__(self) -> None:
        self.refused = False

    def on_response(self, response: Any, *args: Any, **kwargs: Any) -> None:
        try:
            status = response.status_code
            self.refused = 400 <= status < 500 and status not in (408, 429)
            known = _ADVICE.get(status)
            if known is not None and count(known[0]):
                logger.warning("infersight: spans sent to %s are dropped: %s. Counted in failure_count(%r).",
                               response.url, known[1], known[0])
        except Exception:  # noqa: BLE001 - a hook must never break the export
            pass

    def retryable(self) -> bool:
        return not self.refused


def span_exporter(url: str, headers: dict[str, str] | None, timeout_s: float) -> tuple[Any, Callable[[], bool]]:
    """An ``OTLPSpanExporter`` posting to ``url`` whose 401/403/404 answers are counted, and
    whether a batch it failed to send may be sent again."""
    import requests
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    answers = _Answers()
    session = requests.Session()
    session.hooks["response"].append(answers.on_response)
    quiet_stock_exporter_logs(_STOCK_LOGGER)
    exporter = OTLPSpanExporter(endpoint=url, headers=headers, timeout=timeout_s, session=session)
    return exporter, answers.retryable

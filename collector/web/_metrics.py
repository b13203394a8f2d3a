"""``GET /metrics``: the collector's own health in the Prometheus text format.

A handful of lines written by hand; prometheus-client would be one more dependency for them.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from .._counters import NOT_ANALYSED_REASONS, not_analysed
from ..spool import SpoolDepth

router = APIRouter()

_COUNTERS = {
    "spans_received": "Spans acknowledged to exporters (safe in the spool).",
    "spans_stored": "Spans written from the spool to the store.",
    "spans_repeated": "Acknowledged spans not stored again: the store (or their batch) already held that span.",
    "spans_refused": "Spans answered 503 because the spool was full; exporters retry them.",
    "store_errors": "Failed store inserts; the batch was retried, or halved when the store refused its rows.",
    "spans_dead_lettered": "Acknowledged spans the store refused, set aside in the dead_letters table with the reason.",
    "detections_dropped": "Detections of stored spans that the store refused (they can be computed again).",
    "spans_rejected": (
        "Spans left out of accepted requests (bad ids or times, outside the ingest window), "
        "reported as OTLP partial_success."
    ),
    "detections": "Soft failures the inline detectors found in stored LLM outputs.",
}
_NOT_ANALYSED = (
    "Stored LLM outputs the inline detectors did not analyse (wholly), by reason: "
    + "; ".join(f"{reason}: {text}" for reason, text in NOT_ANALYSED_REASONS.items())
    + ". The spans are stored either way."
)
_REJECTED = (
    "OTLP requests answered 4xx, by status; their spans are not counted because a body that "
    "cannot be decoded (or is not decoded, for 401) has no known span count."
)


def render(counters: dict[str, int], depth: SpoolDepth, leases: Mapping[str, bool] | None = None) -> str:
    """The Prometheus text exposition (format 0.0.4) of ``counters``, the spool's ``depth`` and
    which exclusive jobs' ``leases`` this process holds."""
    lines: list[str] = []
    for name, help_text in _COUNTERS.items():
        metric = f"infersight_{name}_total"
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter", f"{metric} {counters.get(name, 0)}"]
    metric = "infersight_outputs_not_analysed_total"
    lines += [f"# HELP {metric} {_NOT_ANALYSED}", f"# TYPE {metric} counter"]
    lines += [f'{metric}{{reason="{reason}"}} {value}' for reason, value in not_analysed(counters).items()]
    metric = "infersight_otlp_rejected_requests_total"
    lines += [f"# HELP {metric} {_REJECTED}", f"# TYPE {metric} counter"]
    rejected = sorted((k.split(":", 1)[1], v) for k, v in counters.items() if k.startswith("rejected:"))
    lines += [f'{metric}{{code="{code}"}} {value}' for code, value in rejected] or [f"{metric} 0"]
    metric = "infersight_job_failures_total"
    lines += [f"# HELP {metric} Runs of a background job (alerts, judge) that raised; it runs again.",
              f"# TYPE {metric} counter"]
    failed = sorted((k.split(":", 1)[1], v) for k, v in counters.items() if k.startswith("job_failed:"))
    lines += [f'{metric}{{job="{job}"}} {value}' for job, value in failed] or [f"{metric} 0"]
    metric = "infersight_job_runs_total"
    lines += [f"# HELP {metric} Runs of a background job (alerts, judge) in this collector.",
              f"# TYPE {metric} counter"]
    runs = sorted((k.split(":", 1)[1], v) for k, v in counters.items() if k.startswith("job_runs:"))
    lines += [f'{metric}{{job="{job}"}} {value}' for job, value in runs] or [f"{metric} 0"]
    gauges = {
        "spool_entries": ("Requests acknowledged but not yet stored.", depth.entries),
        "spool_rows": ("Spans acknowledged but not yet stored.", depth.rows),
        "spool_bytes": ("Compressed bytes the spool holds.", depth.bytes),
        "spool_max_bytes": ("Spool size at which /v1/traces answers 503.", depth.max_bytes),
        "spool_oldest_age_seconds": (
            "Age of the oldest entry not yet stored; 0 when none.", round(depth.oldest_age_s, 3)),
        "detection_backlog_spans": (
            "Stored spans (queryable) whose inline detections are still to come; past the bound, the detectors "
            "sample and count the rest as not analysed (sampled).", depth.backlog_rows),
    }
    for name, (help_text, value) in gauges.items():
        metric = f"infersight_{name}"
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge", f"{metric} {value}"]
    metric = "infersight_job_lease_held"
    lines += [f"# HELP {metric} 1 when this collector holds the job's lease and runs it; one collector of a "
              "deployment does.", f"# TYPE {metric} gauge"]
    lines += [f'{metric}{{job="{job}"}} {int(held)}' for job, held in sorted((leases or {}).items())]
    return "\n".join(lines) + "\n"


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> PlainTextResponse:
    """Counters and spool depth. Unauthenticated like ``/healthz``: no span data, no project names."""
    depth = request.app.state.spool.depth()
    jobs = getattr(request.app.state, "jobs", None)
    text = render(request.app.state.counters.snapshot(), depth, jobs.held() if jobs is not None else None)
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

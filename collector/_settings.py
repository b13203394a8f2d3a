"""Collector settings: one frozen object built by the CLI (or a test) and passed to ``create_app``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infersight.judges import JudgeSettings


DAY_NS = 86_400 * 10**9

DETECT_DEADLINE_S = 10.0
"""The default ``detect_deadline_s``: 30 times the slowest honest span measured (~0.35 s for a
1 Mi-character hostile output). The detectors' worker runs at nice 10, which busy nice-0
processes leave about a tenth of a core, and honest work must not be killed; a poison span
costs the spool writer this long plus a worker restart (~1 s)."""

STOP_BOUND_S = 30
"""The default ``stop_bound_s``: SIGTERM (or SIGINT) stops the collector within this many seconds,
whatever it is doing (Kubernetes' default grace period, after which the pod is killed anyway).

A clean stop takes what its parts are allowed: requests under way ``_server.GRACEFUL_S``, the
background jobs 5 s, the spool writer 5 s of draining and 10 s for an insert under way, the
workers a few seconds (a stuck detector is killed at once). It normally ends within seconds.
If a part hangs past its allowance anyway (a store that accepts connections and never answers),
SIGALRM ends the process at the bound: the spool is durable and the store takes a kill as it
takes kill -9, so nothing acknowledged is lost."""


@dataclass(frozen=True, slots=True)
class IngestWindow:
    """Spans are stored when they start at most ``days_back`` days before the collector's clock
    and at most ``days_ahead`` days after it; others are rejected one by one.

    A backfill of old spans or a client with a wrong clock would otherwise write into hundreds
    of daily partitions (ClickHouse refuses an insert touching more than 100) and outlive
    their TTL on arrival. ``days_back + days_ahead`` stays under 99 so one request never spans
    more than 100 days.
    """

    days_back: int = 30
    days_ahead: int = 1

    def __post_init__(self) -> None:
        if self.days_back < 1 or self.days_ahead < 0 or self.days_back + self.days_ahead > 98:
            raise ValueError(
                "The ingest window must be at least 1 day back, 0 or more days ahead and 98 days in all "
                f"(ClickHouse stores at most 100 days per insert); got {self.days_back} back, {self.days_ahead} ahead."
            )

    def bounds_ns(self, now_s: float | None = None) -> tuple[int, int]:
        now_ns = int((time.time() if now_s is None else now_s) * 1e9)
        return now_ns - self.days_back * DAY_NS, now_ns + self.days_ahead * DAY_NS


@dataclass(frozen=True, slots=True)
class Settings:
    """How a collector runs.

    Attributes:
        data_dir: where the embedded store (chDB), the spool and the key file live.
        host, port: where HTTP is served (OTLP, API and dashboards on one port).
        max_body_bytes: largest accepted OTLP body after decompression (413 above it).
        auth: require a project API key (``Authorization: Bearer``) on ``/v1/traces`` and
            ``/api/v1/*`` and a login for the dashboards. ``False`` is the single-user dev mode.
        project: the project of every request when ``auth`` is off. With ``auth`` on, the
            project comes from each request's key.
        spool_max_bytes: spool size (compressed) at which ``/v1/traces`` answers 503.
        decode_workers: processes that decode OTLP and run the inline detectors; ``None``: one
            per core but one (at least one, at most four); 0: in the server process.
        alerts: run the alert evaluator (every ``evaluation_interval_s``) in this process. A
            deployment runs exactly one evaluator.
        digest_hour_utc: from this hour (UTC) each day, yesterday's daily digest goes out through
            the alert channels as a non-paging message; ``None``: no digest.
        slo: share of GenAI calls that must succeed; its complement is the error budget that
            the error-spike alert measures burn against.
        outage_burst_minutes: the minutes a provider's burst of errors (and its retries) may take
            before the error-spike alert calls it an outage. 3 pages a partial outage within
            5 minutes at 8 calls a minute; 4 pages two bursts back to back 4x less often, and
            such an outage minutes later, at a dozen calls a minute now and then not at all
            (BENCHMARKS.md, 'The pager'): for busy services whose providers burst often.
        cost_ratio: a tenant's or route's last hour must reach this multiple of its seasonal
            baseline to page as a cost anomaly.
        cost_min_excess_share, cost_min_excess_usd: and its excess must reach this share of the
            key's own mean hourly spend (so small tenants are judged on their own scale) and
            this many dollars.
        alertmanager_url, alert_webhook_url, slack_webhook_url: where pages go (any of them).
        public_url: the dashboards' address as on-call opens it, for links in alerts; defaults
            to ``http://host:port``.
        clickhouse_url: store in this ClickHouse server (``http://user:pass@host:8123/db``)
            instead of the embedded store; the spool and keys stay in ``data_dir``.
        cluster: with ``clickhouse_url``, create the schema ON CLUSTER with Replicated tables
            and Distributed tables for reads and writes.
        judge: judge a sample of spans with an LLM judge in this process (``None``: off). Like
            the alert evaluator, exactly one process of a deployment should do it.
        ingest_window: how far from now a span may start and still be stored.
        body_timeout_s: a request body must arrive within this many seconds (408 after it), so a
            client that sends half a request cannot hold a connection and its memory forever.
        detect_deadline_s: the inline detectors may spend this long on one span (see
            :data:`DETECT_DEADLINE_S` for the default's reason); past it their worker is killed
            and replaced, and the span is stored unanalysed (counted). Needs decode workers:
            with ``decode_workers=0`` the detectors run in the server process, unbounded.
        lease_ttl_s: how long the lease of the alert evaluator and the judge lasts unless renewed
            (every third of it; ``None``: ``store.LEASE_TTL_S``, 30 s). A collector that dies
            without releasing it holds them back this long (and a renewal interval more for its
            successor to notice); shorter, the collectors write to the store more often.
        stop_bound_s: whole seconds from SIGTERM (or SIGINT) to the end of the process, whatever
            hangs: a deployment whose orchestrator kills sooner sets it below its grace period.
    """

    data_dir: Path = Path(".infersight")
    host: str = "127.0.0.1"
    port: int = 4318
    max_body_bytes: int = 64 * 1024 * 1024
    auth: bool = True
    project: str = "default"
    spool_max_bytes: int = 1024 * 1024 * 1024
    decode_workers: int | None = None
    alerts: bool = True
    evaluation_interval_s: float = 60.0
    slo: float = 0.995
    outage_burst_minutes: int = 3
    cost_ratio: float = 2.0
    cost_min_excess_share: float = 0.5
    cost_min_excess_usd: float = 0.01
    digest_hour_utc: int | None = 8
    alertmanager_url: str | None = None
    alert_webhook_url: str | None = None
    slack_webhook_url: str | None = None
    public_url: str | None = None
    clickhouse_url: str | None = None
    cluster: str | None = None
    judge: JudgeSettings | None = None
    ingest_window: IngestWindow = field(default_factory=IngestWindow)
    body_timeout_s: float = 30.0
    detect_deadline_s: float = DETECT_DEADLINE_S
    lease_ttl_s: float | None = None
    stop_bound_s: int = STOP_BOUND_S

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"The 'port' setting must be between 0 and 65535; got {self.port}.")
        if self.max_body_bytes <= 0:
            raise ValueError(
                f"The 'max_body_bytes' setting must be positive; got {self.max_body_bytes}."
            )
        if self.cluster and not self.clickhouse_url:
            raise ValueError("The 'cluster' setting needs 'clickhouse_url': the embedded store is one process.")
        if not 0.0 < self.slo < 1.0:
            raise ValueError(f"The 'slo' setting must be between 0 and 1 (e.g. 0.995); got {self.slo}.")
        if not 1 <= self.outage_burst_minutes <= 4:
            raise ValueError("The 'outage_burst_minutes' setting must be between 1 and 4 (the outage test reads "
                             f"5 minutes, one at least beyond the burst); got {self.outage_burst_minutes}.")
        if self.cost_ratio <= 1.5:
            raise ValueError(f"The 'cost_ratio' setting must be above 1.5 (its resolve level); got {self.cost_ratio}.")
        if self.cost_min_excess_share < 0 or self.cost_min_excess_usd < 0:
            raise ValueError(
                "The 'cost_min_excess_share' and 'cost_min_excess_usd' settings must be 0 or more; "
                f"got {self.cost_min_excess_share} and {self.cost_min_excess_usd}."
            )
        if self.evaluation_interval_s <= 0:
            raise ValueError(
                f"The 'evaluation_interval_s' setting must be positive; got {self.evaluation_interval_s}."
            )
        if self.decode_workers is not None and self.decode_workers < 0:
            raise ValueError(f"The 'decode_workers' setting must be 0 or more; got {self.decode_workers}.")
        if not self.body_timeout_s > 0:
            raise ValueError(f"The 'body_timeout_s' setting must be positive; got {self.body_timeout_s}.")
        if not self.detect_deadline_s > 0:
            raise ValueError(f"The 'detect_deadline_s' setting must be positive; got {self.detect_deadline_s}.")
        if self.lease_ttl_s is not None and not self.lease_ttl_s > 0:
            raise ValueError(f"The 'lease_ttl_s' setting must be positive; got {self.lease_ttl_s}.")
        if self.stop_bound_s < 1:
            raise ValueError(f"The 'stop_bound_s' setting must be 1 or more seconds; got {self.stop_bound_s}.")
        if self.spool_max_bytes <= 0:
            raise ValueError(
                f"The 'spool_max_bytes' setting must be positive; got {self.spool_max_bytes}."
            )

    @property
    def external_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

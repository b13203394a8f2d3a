"""Weeks of realistic multi-tenant LLM traffic for the pager simulation (``replay.py``).

What is in it, and why each part is there (each is a way a pager cries wolf or stays silent):

- 30 tenants with Zipf volume (exponent 1.1: the largest makes ~40x the smallest's calls), each in
  a time zone of its own, so tenants peak at different hours and routes mix several rhythms.
- Diurnal and weekly seasonality: night is ~0.15x the daily mean, the afternoon ~1.7x, weekends
  ~0.4x (the weekend lull).
- Four services: a RAG answer (retrieval, rerank, LLM call), agent sessions of 2-15 LLM steps
  with tool spans between them, a summariser on a dearer model, a small query rewriter. Non-LLM
  spans dilute nothing the pager reads (the span contract), but they are in the store.
- Provider 5xx bursts: ~3 a day per provider, 0.5-2.5 minutes, 30-90% of that provider's calls
  failing, and clients retry a failed call up to twice. Bursts are normal life, never a page.
- An onboarding tenant that starts 16 days before the final week and ramps to 3x its first
  day's volume over two weeks; a new route that appears in the final week.
- Worker queues: one queue on 3 replicas (instances), each fed batches every 10 minutes
  (sawtooth) and drained by 4 consumers; depth and oldest-item age reported once a minute per
  instance, as the SDK's ``watch_queue`` gauges would be.

Volume: the target shape is 1.6M spans a week; ``scale`` multiplies every rate (the default
0.25 keeps a 5-week, 10-project run within minutes on 2 cores). Fewer calls per minute make both
false pages and missed incidents *more* likely, so a scaled-down run is the harder test.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

WEEKS = 5
# The final week is the last complete week before today, and the run starts 4 weeks before it
# (a Monday): queue samples live 30 days (the table's TTL), so the replayed week must be recent.
_TODAY = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
START = _TODAY - timedelta(days=_TODAY.weekday() + 7) - timedelta(weeks=WEEKS - 1)
MINUTES_PER_DAY = 1440
SPANS_PER_WEEK = 1_600_000
TENANTS = 30
ONBOARDING = "t29"  # joins 16 days before the final week
NEW_ROUTE = "support.translate"  # first seen in the final week

# service -> (provider, routes with shares, model, share of requests)
SERVICES = {
    "chat-api": ("openai", (("support.answer", 0.8), ("support.search", 0.2)), "gpt-4o-mini", 0.50),
    "agent-runner": ("openai", (("agent.plan", 1.0),), "gpt-4o", 0.12),
    "summarizer": ("anthropic", (("docs.summarize", 1.0),), "claude-sonnet", 0.13),
    "search-assist": ("google", (("search.rewrite", 1.0),), "gemini-flash", 0.25),
}
# $ per 1M tokens (input, output)
PRICES = {"gpt-4o-mini": (0.15, 0.6), "gpt-4o": (2.5, 10.0), "claude-sonnet": (3.0, 15.0),
          "gemini-flash": (0.1, 0.4), "o1": (15.0, 60.0)}
# route -> (median input tokens, median output tokens)
TOKENS = {"support.answer": (1800, 250), "support.search": (600, 120), "agent.plan": (2500, 300),
          "docs.summarize": (6000, 500), "search.rewrite": (300, 40), NEW_ROUTE: (900, 400)}
BASE_ERROR = {"chat-api": 0.004, "agent-runner": 0.008, "summarizer": 0.006, "search-assist": 0.003}
SPANS_PER_REQUEST = {"chat-api": 3.0, "agent-runner": 8.5 * 1.5 + 1, "summarizer": 1.0, "search-assist": 2.0}


def diurnal(local_hour: np.ndarray) -> np.ndarray:
    """Relative load by local hour: a trough at 04:00, the peak at 15:00, mean ~1."""
    x = np.cos((local_hour - 15.0) / 24.0 * 2 * math.pi)
    return 0.15 + 1.55 * ((x + 1) / 2) ** 1.6


@dataclass
class Tenant:
    name: str
    weight: float
    tz_hours: float
    start_day: int = 0
    ramp_days: float = 0.0
    service_mix: dict[str, float] = field(default_factory=dict)


@dataclass
class Modifiers:
    """What incidents do to traffic: per-minute error probabilities, cost factors, extra calls."""

    error_floor: dict[str, np.ndarray] = field(default_factory=dict)  # service -> per-minute error prob
    error_factor: dict[str, np.ndarray] = field(default_factory=dict)  # service -> per-minute multiplier
    tenant_cost: dict[str, np.ndarray] = field(default_factory=dict)  # tenant -> per-minute cost factor
    route_model: dict[str, tuple[np.ndarray, str]] = field(default_factory=dict)  # route -> (mask, model)
    heavy_sessions: list[tuple[str, int, int, int]] = field(default_factory=list)  # tenant, minute, minutes, steps
    runaways: list[tuple[str, int, int, float]] = field(default_factory=list)  # tenant, minute, minutes, x its spend
    queue_capacity: dict[str, np.ndarray] = field(default_factory=dict)  # instance -> per-minute factor
    queue_silent_from: dict[str, int] = field(default_factory=dict)  # instance -> minute


def total_minutes() -> int:
    return WEEKS * 7 * MINUTES_PER_DAY


def make_tenants(rng: np.random.Generator) -> list[Tenant]:
    weights = 1.0 / np.arange(1, TENANTS + 1) ** 1.1
    zones = (-8, -5, 0, 1, 2, 5.5, 8, 9)
    out = []
    for i in range(TENANTS):
        mix = rng.dirichlet(np.full(len(SERVICES), 2.0))
        shares = np.array([s[3] for s in SERVICES.values()]) * mix
        out.append(Tenant(f"t{i:02d}", float(weights[i]), float(rng.choice(zones)),
                          service_mix=dict(zip(SERVICES, shares / shares.sum(), strict=True))))
    onboarding = out[-1]
    onboarding.weight = float(weights[3])  # a sizeable customer once ramped
    onboarding.start_day, onboarding.ramp_days = (WEEKS - 1) * 7 - 16, 14.0
    return out


def _burst_floor(rng: np.random.Generator, minutes: int) -> dict[str, np.ndarray]:
    """Per provider, the per-minute error probability its 5xx bursts add."""
    out = {}
    # sorted: a set's order of strings changes with each process's hash seed, and with it which
    # provider got which bursts (the same seed loaded twice was different traffic)
    for provider in sorted({s[0] for s in SERVICES.values()}):
        floor = np.zeros(minutes)
        for _ in range(rng.poisson(3.0 * minutes / MINUTES_PER_DAY)):
            at = int(rng.integers(0, minutes))
            length = float(rng.uniform(0.5, 2.5))
            floor[at:at + math.ceil(length)] = np.maximum(floor[at:at + math.ceil(length)], rng.uniform(0.3, 0.9))
        out[provider] = floor
    return out


class Traffic:
    """One project's weeks of spans and queue samples, generated day by day (deterministic per seed)."""

    def __init__(self, project: str, seed: int, scale: float, mods: Modifiers | None = None) -> None:
        self.project, self.seed, self.scale = project, seed, scale
        self.mods = mods or Modifiers()
        world = np.random.default_rng(seed)
        self.tenants = make_tenants(world)
        self.bursts = _burst_floor(world, total_minutes())
        # calls per minute per tenant-service at load 1.0, so a week holds ~SPANS_PER_WEEK * scale spans
        spans_per_request = sum(s[3] * SPANS_PER_REQUEST[n] for n, s in SERVICES.items())
        self.requests_per_minute = SPANS_PER_WEEK * scale / (7 * MINUTES_PER_DAY) / spans_per_request / 0.62
        self.new_route_from = (WEEKS - 1) * 7 * MINUTES_PER_DAY + 2 * MINUTES_PER_DAY + 600  # Wednesday 10:00

    # -- spans --------------------------------------------------------------------------------

    def days(self) -> Iterator[bytes]:
        """JSONEachRow ``llm_spans`` rows, one chunk per day."""
        for day in range(WEEKS * 7):
            yield self.day_rows(day)

    def _rates(self, day: int, minute0: int) -> np.ndarray:
        """Expected requests per minute, [minute, tenant, service]."""
        minute = np.arange(MINUTES_PER_DAY)
        t_hours = (minute0 + minute) / 60.0
        total = sum(t.weight for t in self.tenants)
        rates = np.zeros((MINUTES_PER_DAY, TENANTS, len(SERVICES)))
        for i, tenant in enumerate(self.tenants):
            local = (t_hours + tenant.tz_hours) % 24
            local_day = np.floor((t_hours + tenant.tz_hours) / 24) + 0  # days since START, local
            weekend = ((local_day % 7) >= 5)
            load = diurnal(local) * np.where(weekend, 0.4, 1.0)
            if tenant.start_day:
                age = (minute0 + minute) / MINUTES_PER_DAY - tenant.start_day
                load = np.where(age < 0, 0.0, load * (1 + 2 * np.clip(age / tenant.ramp_days, 0, 1)) / 3)
            for j, service in enumerate(SERVICES):
                rates[:, i, j] = self.requests_per_minute * tenant.weight / total * tenant.service_mix[service] * load
        return rates

    def day_rows(self, day: int) -> bytes:
        rng = np.random.default_rng([self.seed, day, 7])
        minute0 = day * MINUTES_PER_DAY
        counts = rng.poisson(self._rates(day, minute0))
        lines: list[str] = []
        m_idx, t_idx, s_idx = np.nonzero(counts)
        reps = counts[m_idx, t_idx, s_idx]
        m_all = np.repeat(m_idx, reps) + minute0
        t_all = np.repeat(t_idx, reps)
        s_all = np.repeat(s_idx, reps)
        services = list(SERVICES)
        for j, service in enumerate(services):
            sel = s_all == j
            self._service_rows(rng, service, m_all[sel], t_all[sel], lines, day)
        for tenant, at, length, steps in self.mods.heavy_sessions:
            if at // MINUTES_PER_DAY == day:
                self._heavy_session(rng, tenant, at, length, steps, lines)
        for tenant, at, length, factor in self.mods.runaways:
            if at // MINUTES_PER_DAY == day:
                self._runaway(rng, tenant, at, length, factor, lines)
        return ("\n".join(lines) + "\n").encode()

    def _runaway(self, rng: np.random.Generator, tenant: str, at: int, length: int, factor: float,
                 lines: list[str]) -> None:
        """An agent loop in one trace that spends ``factor`` times the tenant's mean spend of a
        minute on its day (a loop keeps its pace whatever the hour), in steps of ~1 cent on gpt-4o."""
        trace = f"loop{self.seed:02x}{at:08x}"
        index = next(i for i, t in enumerate(self.tenants) if t.name == tenant)
        day = at // MINUTES_PER_DAY
        usd = float((self._rates(day, day * MINUTES_PER_DAY)[:, index, :] @ self._request_usd()).mean())
        step_usd = _mean_call_usd("agent.plan", "gpt-4o")
        for m in range(length):
            for _ in range(int(rng.poisson(factor * usd / step_usd))):
                t = START + timedelta(minutes=at + m, seconds=float(rng.uniform(0, 60)))
                self._llm_with_retries(rng, t, trace, "agent-runner", "openai", "gpt-4o", tenant, "agent.plan", lines)

    def _request_usd(self) -> np.ndarray:
        """The mean cost of one request of each service."""
        steps = {"agent-runner": 8.5}
        return np.array([steps.get(name, 1.0) * sum(share * _mean_call_usd(route, spec[2]) for route, share in spec[1])
                         for name, spec in SERVICES.items()])

    def _service_rows(self, rng: np.random.Generator, service: str, minutes: np.ndarray, tenants: np.ndarray,
                      lines: list[str], day: int) -> None:
        provider, routes, model, _ = SERVICES[service]
        n = len(minutes)
        if not n:
            return
        seconds = rng.uniform(0, 60, n)
        trace_ids = [f"{self.seed:02x}{day:03x}{service[:2]}{k:08x}" for k in range(n)]
        route_names = [r for r, _ in routes]
        route_idx = rng.choice(len(routes), n, p=[s for _, s in routes])
        if service == "chat-api":
            new = (minutes >= self.new_route_from) & (rng.random(n) < 0.1)
            route_idx = np.where(new, len(route_names), route_idx)
            route_names = [*route_names, NEW_ROUTE]
        steps = rng.integers(2, 16, n) if service == "agent-runner" else np.ones(n, dtype=int)
        for k in range(n):
            t = START + timedelta(minutes=int(minutes[k]), seconds=float(seconds[k]))
            tenant = self.tenants[tenants[k]].name
            route = route_names[route_idx[k]]
            trace = trace_ids[k]
            if service == "chat-api":
                lines.append(self._other(t, trace, service, tenant, route, "retrieval", 0.05))
                lines.append(self._other(t, trace, service, tenant, route, "rerank", 0.08))
            elif service == "search-assist":
                lines.append(self._other(t, trace, service, tenant, route, "embeddings", 0.03))
            elif service == "agent-runner":
                lines.append(self._other(t, trace, service, tenant, route, "invoke_agent", 4.0 * steps[k]))
            for step in range(int(steps[k])):
                at = t + timedelta(seconds=4.0 * step)
                self._llm_with_retries(rng, at, trace, service, provider, model, tenant, route, lines)
                if service == "agent-runner" and step % 2:
                    lines.append(self._other(at, trace, service, tenant, route, "execute_tool", 0.4))

    def _error_prob(self, service: str, provider: str, minute: int) -> float:
        p = BASE_ERROR[service]
        if service in self.mods.error_factor:
            p *= float(self.mods.error_factor[service][minute])
        p = max(p, float(self.bursts[provider][minute]))
        if service in self.mods.error_floor:
            p = max(p, float(self.mods.error_floor[service][minute]))
        return p

    def _model_of(self, route: str, t: datetime, model: str) -> str:
        """The model a call of ``route`` at ``t`` uses: the incidents' model change, else ``model``."""
        minute = min(int((t - START).total_seconds() // 60), total_minutes() - 1)
        if route in self.mods.route_model and self.mods.route_model[route][0][minute]:
            return self.mods.route_model[route][1]
        return model

    def _llm_with_retries(self, rng: np.random.Generator, t: datetime, trace: str, service: str, provider: str,
                          model: str, tenant: str, route: str, lines: list[str]) -> None:
        model = self._model_of(route, t, model)
        for attempt in range(3):
            minute = min(int((t - START).total_seconds() // 60), total_minutes() - 1)
            failed = rng.random() < self._error_prob(service, provider, minute)
            in_med, out_med = TOKENS[route]
            tin = int(in_med * rng.lognormal(0, 0.5))
            tout = 0 if failed else int(out_med * rng.lognormal(0, 0.6))
            price_in, price_out = PRICES[model]
            cost = (tin * price_in + tout * price_out) / 1e6
            if tenant in self.mods.tenant_cost:
                factor = float(self.mods.tenant_cost[tenant][minute])
                cost, tin = cost * factor, int(tin * factor)
            lines.append(self._llm(t, trace, service, provider, model, tenant, route, tin, tout, cost, failed,
                                   attempt))
            # clients retry transient failures twice, 1-3 s apart; most give up after a success
            if not failed or rng.random() < 0.2:
                return
            t = t + timedelta(seconds=float(rng.uniform(1, 3)))

    def _heavy_session(self, rng: np.random.Generator, tenant: str, at: int, length: int, steps: int,
                       lines: list[str]) -> None:
        """One long agent session (one trace): heavy-tailed, and not an incident."""
        trace = f"heavy{self.seed:02x}{at:08x}"
        for step in range(steps):
            t = START + timedelta(minutes=at + length * step / steps)
            self._llm_with_retries(rng, t, trace, "agent-runner", "openai", "gpt-4o", tenant, "agent.plan", lines)

    def _llm(self, t: datetime, trace: str, service: str, provider: str, model: str, tenant: str, route: str,
             tin: int, tout: int, cost: float, failed: bool, attempt: int) -> str:
        status = '"error","error_class":"transient","error_type":"InternalServerError"' if failed else '"ok"'
        return (f'{{"project":"{self.project}","ts":"{t:%Y-%m-%d %H:%M:%S.%f}","trace_id":"{trace}",'
                f'"span_id":"{trace}{attempt}{t.microsecond:06d}","service":"{service}","operation":"chat",'
                f'"tenant":"{tenant}","route":"{route}","provider":"{provider}","model":"{model}",'
                f'"request_model":"{model}","input_tokens":{tin},"output_tokens":{tout},"cost_usd":{cost:.8f},'
                f'"duration_s":{0.3 + tout / 80:.3f},"status":{status}}}')

    def _other(self, t: datetime, trace: str, service: str, tenant: str, route: str, operation: str,
               duration: float) -> str:
        return (f'{{"project":"{self.project}","ts":"{t:%Y-%m-%d %H:%M:%S.%f}","trace_id":"{trace}",'
                f'"service":"{service}","operation":"{operation}","tenant":"{tenant}","route":"{route}",'
                f'"duration_s":{duration:.3f},"status":"ok"}}')

    # -- queues ---------------------------------------------------------------------------------

    def queue_rows(self, with_instance: bool, first_minute: int = 0) -> list[dict[str, object]]:
        """``queue_depth`` rows: queue ``jobs`` of service ``worker`` on 3 instances, once a minute,
        the queues starting empty at ``first_minute``."""
        rows: list[dict[str, object]] = []
        rng = np.random.default_rng([self.seed, 99])
        minutes = total_minutes()
        load = queue_load(minutes)
        for i in range(3):
            instance = f"worker-{i}"
            capacity = self.mods.queue_capacity.get(instance, np.ones(minutes))
            silent_from = self.mods.queue_silent_from.get(instance, minutes)
            offset_s = float(rng.uniform(0, 59))
            for m, depth, age in replica(rng, load, capacity, self.scale, first_minute, minutes):
                if m >= silent_from:
                    continue
                row: dict[str, object] = {
                    "project": self.project, "service": "worker", "queue": "jobs",
                    "ts": f"{START + timedelta(minutes=m, seconds=offset_s):%Y-%m-%d %H:%M:%S.%f}",
                    "depth": depth, "oldest_age_s": age,
                }
                if with_instance:
                    row["instance"] = instance
                rows.append(row)
        return rows


def _mean_call_usd(route: str, model: str) -> float:
    """The mean cost of one call (tokens drawn lognormal around the route's medians)."""
    in_med, out_med = TOKENS[route]
    price_in, price_out = PRICES[model]
    return (in_med * math.exp(0.5 ** 2 / 2) * price_in + out_med * math.exp(0.6 ** 2 / 2) * price_out) / 1e6


def queue_load(minutes: int) -> np.ndarray:
    """The worker queue's relative load per minute of the run (UTC diurnal, weekend lull)."""
    return diurnal((np.arange(minutes) / 60.0) % 24) * np.where(
        ((np.arange(minutes) // MINUTES_PER_DAY) % 7) >= 5, 0.4, 1.0)


def replica(rng: np.random.Generator, load: np.ndarray, capacity: np.ndarray, scale: float, first_minute: int,
            last_minute: int) -> Iterator[tuple[int, float, float]]:
    """(minute, depth, oldest age s) of one replica's queue, once a minute from an empty queue at
    ``first_minute``: fed batches every 10 minutes (the sawtooth's tooth) and a trickle, drained
    by 4 consumers at ``capacity`` (per minute, 1 = all working)."""
    backlog: deque[list[float]] = deque()  # [enqueued at (minute), count], oldest first
    phase = int(rng.integers(0, 10))
    for m in range(first_minute, last_minute):
        arrivals = rng.poisson(3 * load[m])
        if (m + phase) % 10 == 0:  # the batch (a cron, a fan-out): the sawtooth's tooth
            arrivals += rng.poisson(280 * load[m] * scale / 0.25 + 5)
        if arrivals:
            backlog.append([m + rng.uniform(0, 1), float(arrivals)])
        # 4 consumers, sized for the volume like the batches (at scale 1 they were not: the
        # queue really fell behind every afternoon), and never slower than at 0.25: below it
        # the unscaled trickle outgrew them and every queue paged all week
        drain = 4 * 20.0 * max(scale, 0.25) / 0.25 * float(capacity[m]) * rng.uniform(0.8, 1.2)
        while drain > 0 and backlog:
            take = min(drain, backlog[0][1])
            backlog[0][1] -= take
            drain -= take
            if backlog[0][1] <= 1e-9:
                backlog.popleft()
        depth = float(round(sum(b[1] for b in backlog)))
        age = (m + 1 - backlog[0][0]) * 60 if backlog and depth > 0 else 0.0
        yield m, depth, round(age, 1)

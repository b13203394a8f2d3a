"""A second traffic shape for the pager simulation, one no rule was tuned on (``--generator b``).

Where ``traffic.py`` is 30 Zipf tenants in 8 time zones and a steady fleet, this is a smaller,
lumpier business with the habits that fool pagers in other ways:

- 12 tenants: two enterprise whales that make half the calls, ten small ones (Zipf 0.6), mostly
  in Asian and European time zones; agent sessions are a third of the requests, not an eighth.
- Long agent sessions: ~4 a day, each one trace of 1-4 hours with a step every 1-2 minutes
  (40-240 calls), on any tenant: normal life that one session's spend rate must not page for.
- A nightly batch: tenant ``t11`` runs a summarising job from 01:00 to 01:45 UTC every night at
  ~40x its daytime rate and is quiet otherwise; its hour's spend is huge and normal.
- Bursty retries: a failed call is retried up to 5 times 0.2-1 s apart (a retry storm), and
  clients seldom give up, so a provider burst makes several failed spans per request.
- Deploys with new instance ids: every weekday at ~10:00 UTC the 3 worker replicas are rolled
  one after another, each new process with a new random ``service.instance.id`` and its old one's
  last point marked ended (the SDK's clean shutdown); once a week one replica is killed (an OOM)
  without that mark and its replacement reports 2 minutes later. Instance ids are
  ``worker-<slot>@<hex>``: the incident library's queue targets are slots.

The seeds in :data:`SEEDS` were fixed, and this file committed, before any rule was tuned on it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from . import traffic as pt

SEEDS = (201, 202, 203, 204, 205)
"""The seeds reported in BENCHMARKS.md; frozen with the generator."""
TENANTS = 12
BATCH_TENANT = "t11"
BATCH_MINUTES = (60, 105)  # 01:00-01:45 UTC
DEPLOY_MINUTE = 600  # 10:00 UTC on weekdays
_ZONES = (5.5, 8, 9, 1, 2, 8, 9, 5.5, 0, 1, 8, 0)


def make_tenants(rng: np.random.Generator) -> list[pt.Tenant]:
    small = 1.0 / np.arange(1, TENANTS - 1) ** 0.6
    weights = np.concatenate(([small.sum() / 2] * 2, small))  # the two whales: half the calls together
    shares = np.array([0.35, 0.33, 0.12, 0.20])  # chat, agent, summariser, search
    out = []
    for i in range(TENANTS):
        mix = shares * rng.dirichlet(np.full(len(pt.SERVICES), 4.0))
        out.append(pt.Tenant(f"t{i:02d}", float(weights[i]), float(_ZONES[i]),
                             service_mix=dict(zip(pt.SERVICES, mix / mix.sum(), strict=True))))
    return out


def long_sessions(seed: int, tenants: list[pt.Tenant]) -> list[tuple[str, int, int, int]]:
    """(tenant, first minute, minutes, steps) of every long agent session of the run."""
    rng = np.random.default_rng([seed, 31])
    out = []
    for day in range(pt.WEEKS * 7):
        for _ in range(rng.poisson(4.0)):
            minutes = int(rng.integers(60, 241))
            steps = int(minutes / rng.uniform(1.0, 2.0))
            at = day * pt.MINUTES_PER_DAY + int(rng.integers(0, pt.MINUTES_PER_DAY))
            out.append((tenants[int(rng.integers(0, TENANTS - 1))].name, at, minutes, steps))
    return out


class TrafficB(pt.Traffic):
    """One project's weeks of the second shape (deterministic per seed)."""

    def __init__(self, project: str, seed: int, scale: float, mods: pt.Modifiers | None = None) -> None:
        super().__init__(project, seed, scale, mods)
        self.tenants = make_tenants(np.random.default_rng([seed, 11]))
        self.new_route_from = pt.total_minutes()  # no new route in this shape
        self.mods = pt.Modifiers(**{**vars(self.mods), "heavy_sessions": [
            *self.mods.heavy_sessions, *long_sessions(seed, self.tenants)]})

    def _rates(self, day: int, minute0: int) -> np.ndarray:
        rates = super()._rates(day, minute0)
        batch = int(BATCH_TENANT[1:])
        summariser = list(pt.SERVICES).index("summarizer")
        daytime = rates[:, batch, summariser].mean()
        rates[:, batch, :] = 0.0
        rates[BATCH_MINUTES[0]:BATCH_MINUTES[1], batch, summariser] = 40 * daytime + 0.5
        return rates

    def _llm_with_retries(self, rng: np.random.Generator, t: datetime, trace: str, service: str, provider: str,
                          model: str, tenant: str, route: str, lines: list[str]) -> None:
        model = self._model_of(route, t, model)
        for attempt in range(6):
            minute = min(int((t - pt.START).total_seconds() // 60), pt.total_minutes() - 1)
            failed = rng.random() < self._error_prob(service, provider, minute)
            in_med, out_med = pt.TOKENS[route]
            tin = int(in_med * rng.lognormal(0, 0.5))
            tout = 0 if failed else int(out_med * rng.lognormal(0, 0.6))
            price_in, price_out = pt.PRICES[model]
            cost = (tin * price_in + tout * price_out) / 1e6
            if tenant in self.mods.tenant_cost:
                factor = float(self.mods.tenant_cost[tenant][minute])
                cost, tin = cost * factor, int(tin * factor)
            lines.append(self._llm(t, trace, service, provider, model, tenant, route, tin, tout, cost, failed,
                                   attempt))
            if not failed or rng.random() < 0.05:
                return
            t = t + timedelta(seconds=float(rng.uniform(0.2, 1.0)))

    def queue_rows(self, with_instance: bool, first_minute: int = 0) -> list[dict[str, object]]:
        """The replicas' rows of ``traffic.Traffic``, each replica's process replaced at every deploy."""
        rows = super().queue_rows(True, first_minute)
        deploys = self._deploys()
        out: list[dict[str, object]] = []
        for row in rows:
            slot = int(str(row["instance"]).rsplit("-", 1)[1])
            minute = int((datetime.fromisoformat(str(row["ts"])).replace(tzinfo=pt.START.tzinfo)
                          - pt.START).total_seconds() // 60)
            epoch = int(np.searchsorted(deploys[slot][0], minute, side="right"))
            if epoch and minute < deploys[slot][0][epoch - 1] + deploys[slot][2][epoch - 1]:
                continue  # the killed process's replacement is not up yet
            name = f"{(self.seed * 7919 + slot * 104729 + epoch * 15485863) % 16**6:06x}"
            ended = epoch < len(deploys[slot][0]) and minute == deploys[slot][0][epoch] - 1 \
                and deploys[slot][1][epoch]
            out.append({**row, "instance": f"worker-{slot}@{name}", "instance_label": f"pod worker-{slot}-{name}",
                        "ended": bool(ended)})
        return out

    def _deploys(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per slot: the minutes its new process starts, whether the old one stopped cleanly, and
        how long the new one takes to report (0, or 2 minutes after a kill)."""
        rng = np.random.default_rng([self.seed, 53])
        days = [d for d in range(pt.WEEKS * 7) if d % 7 < 5]
        starts = {slot: [] for slot in range(3)}
        clean: dict[int, list[bool]] = {slot: [] for slot in range(3)}
        for day in range(pt.WEEKS * 7):
            if day in days:
                at = day * pt.MINUTES_PER_DAY + DEPLOY_MINUTE + int(rng.integers(-30, 31))
                for slot in range(3):
                    starts[slot].append(at + 2 * slot)
                    clean[slot].append(True)
            if day % 7 == 3:  # the weekly OOM kill of one replica
                slot = int(rng.integers(0, 3))
                starts[slot].append(day * pt.MINUTES_PER_DAY + int(rng.integers(0, pt.MINUTES_PER_DAY)))
                clean[slot].append(False)
        out = []
        for slot in range(3):
            order = np.argsort(starts[slot], kind="stable")
            minutes = np.asarray(starts[slot])[order]
            ok = np.asarray(clean[slot])[order]
            out.append((minutes, ok, np.where(ok, 0, 2)))
        return out

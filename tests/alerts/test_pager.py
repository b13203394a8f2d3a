"""The pager's promises on the real embedded store, one short scenario each: one page per
incident (hysteresis), a silent reporter never resolves, queues per instance, cost on a small
tenant's own scale and never for one heavy session, and the floors settable from the CLI."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner

from infersight.collector import Settings
from infersight.collector._cli import main
from infersight.collector.alerts import Evaluator
from infersight.collector.alerts._setup import config_from
from infersight.collector.store import encode_rows

NOW = datetime(2026, 11, 18, 15, 0, 30, tzinfo=timezone.utc)  # a Wednesday afternoon


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def replay(store, project, start, minutes, step=1):
    """Run the evaluator every ``step`` minutes; this project's (minute, event kind, name, labels)."""
    evaluator = Evaluator(store)
    out = []
    for m in range(0, minutes, step):
        for e in evaluator.run_once(start + timedelta(minutes=m)).events:
            if e.state.project == project:
                out.append((m, e.kind, e.state.name, e.state.labels))
    return out


def test_an_error_creep_pages_once_and_resolves_within_15_minutes_of_its_end(store):
    project = "pager-creep"
    onset, end = NOW - timedelta(hours=1), NOW + timedelta(minutes=20)
    rng = random.Random(4)
    rows, at = [], NOW - timedelta(hours=3)
    while at < end + timedelta(minutes=30):
        failed = rng.random() < (0.025 if onset <= at < end else 0.005)  # 5x the 0.5% budget
        rows.append({"project": project, "ts": ts(at), "service": "rag", "operation": "chat", "tenant": "a",
                     "status": "error" if failed else "ok", "error_class": "transient" if failed else ""})
        at += timedelta(seconds=1)
    store.insert("llm_spans", encode_rows(rows))
    events = replay(store, project, NOW - timedelta(minutes=10), 48, step=3)
    fired = [e for e in events if e[1] == "firing"]
    assert len(fired) == 1 and fired[0][0] <= 10  # within the creep's first hour, once
    resolved = [m for m, kind, *_ in events if kind == "resolved"]
    assert len(resolved) == 1 and 0 <= resolved[0] - 30 <= 15  # the end is at minute 30


def depth_rows(project, instance, start, depths):
    return [{"project": project, "service": "worker", "queue": "jobs", "instance": instance,
             "ts": ts(start + timedelta(minutes=i)), "depth": float(d), "oldest_age_s": 30.0}
            for i, d in enumerate(depths)]


def test_queues_are_per_instance_and_a_silent_reporter_never_resolves(store):
    project = "pager-queues"
    start = NOW - timedelta(minutes=30)
    sawtooth = [300, 200, 100, 0, 0] * 6
    rows = depth_rows(project, "worker-0", start, sawtooth)
    rows += depth_rows(project, "worker-1", start, sawtooth[:15] + [250] * 15)  # stalled from minute 15
    rows += depth_rows(project, "worker-2", start, sawtooth[:20])  # stops reporting at minute 20
    store.insert("queue_depth", encode_rows(rows))
    evaluator = Evaluator(store)
    active = [a for a in evaluator.run_once(NOW).active if a.labels["project"] == project]
    assert sorted((a.name, a.labels["instance"]) for a in active) == [
        ("QueueNotDraining", "worker-1"), ("QueueStoppedReporting", "worker-2")]
    stalled = next(a for a in active if a.name == "QueueNotDraining")
    assert stalled.since == start + timedelta(minutes=15)  # the first minute without a fall
    # hours later the silent series is beyond every look-back: still firing, never resolved
    later = evaluator.run_once(NOW + timedelta(hours=3))
    assert not [e for e in later.events if e.state.project == project and e.state.labels["instance"] == "worker-2"]
    firing = store.query("SELECT labels['instance'] AS instance FROM alerts FINAL"
                         " WHERE project = {p:String} AND status = 'firing'", {"p": project})
    assert {r["instance"] for r in firing} >= {"worker-2"}


def test_a_small_tenant_pages_on_its_own_scale_and_one_heavy_session_does_not(store):
    project = "pager-cost"
    rows, at = [], NOW - timedelta(days=15)
    rng = random.Random(9)
    n = 0
    while at < NOW:
        last_hour = at >= NOW - timedelta(minutes=70)
        for tenant, usd in (("big", 0.5), ("small", 0.002), ("solo", 0.01)):
            usd *= rng.uniform(0.8, 1.2) * (3 if tenant == "small" and last_hour else 1)
            n += 1
            rows.append({"project": project, "ts": ts(at), "service": "app", "operation": "chat", "tenant": tenant,
                         "route": f"r-{tenant}", "trace_id": f"t{n}", "cost_usd": usd, "status": "ok"})
        at += timedelta(minutes=2)
    # one long agent session of "solo": 10x its hourly spend, in one trace
    rows += [{"project": project, "ts": ts(NOW - timedelta(minutes=50 - i)), "service": "app", "operation": "chat",
              "tenant": "solo", "route": "r-solo", "trace_id": "heavy", "cost_usd": 0.06, "status": "ok"}
             for i in range(50)]
    store.insert("llm_spans", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels["project"] == project]
    # one page: the tenant's (its route r-small is all its own, so the route does not page too)
    assert [(a.name, a.labels) for a in active] == [("CostAnomaly", {"project": project, "tenant": "small"})]
    small = next(a for a in active if a.labels.get("tenant") == "small")
    assert 2.5 <= small.numbers["ratio"] <= 3.5 and small.numbers["excess_usd"] < 0.2  # cents, and paged


def test_requests_that_cost_3x_page_a_tenant_whose_hours_swing_with_its_sessions(store):
    # "lumpy": 10-14 agent sessions an hour of 1-15 calls each, so its hours swing ~2x with the
    # sessions; in the last 70 minutes every call costs 3x (a prompt that tripled)
    project = "pager-unit"
    rng = random.Random(5)
    rows, hour = [], NOW.replace(minute=0, second=0, microsecond=0) - timedelta(days=15)
    while hour < NOW:
        for session in range(rng.randint(10, 14)):
            start = hour + timedelta(minutes=rng.uniform(0, 60))
            factor = 3.0 if start >= NOW - timedelta(minutes=70) else 1.0
            rows += [{"project": project, "ts": ts(start + timedelta(seconds=5 * step)), "service": "agent",
                      "operation": "chat", "tenant": "lumpy", "route": "agent.plan",
                      "trace_id": f"{hour:%j%H}-{session}", "cost_usd": 0.01 * factor * rng.lognormvariate(0, 0.3),
                      "status": "ok"} for step in range(rng.randint(1, 15))]
        hour += timedelta(hours=1)
    store.insert("llm_spans", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels["project"] == project]
    assert [a.labels.get("tenant") for a in active] == ["lumpy"]  # the tenant pages; its own route is held
    assert 2.5 <= active[0].numbers["request_cost_ratio"] <= 3.5


def test_a_route_whose_requests_got_dearer_pages_once_for_the_route(store):
    # four tenants share route "r"; in the last 70 minutes its model costs 3x for all of them:
    # one page, the route's; the tenants' spend and requests are dearer only through it
    project = "pager-route"
    rng = random.Random(6)
    rows, at, n = [], NOW - timedelta(days=15), 0
    while at < NOW:
        dearer = 3.0 if at >= NOW - timedelta(minutes=70) else 1.0
        for tenant in ("a", "b", "c", "d"):
            n += 1
            rows.append({"project": project, "ts": ts(at), "service": "app", "operation": "chat", "tenant": tenant,
                         "route": "r", "trace_id": f"t{n}", "status": "ok",
                         "cost_usd": 0.02 * dearer * rng.lognormvariate(0, 0.3)})
        at += timedelta(minutes=3)
    store.insert("llm_spans", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels["project"] == project]
    assert [a.labels for a in active] == [{"project": project, "route": "r"}]
    assert 2.5 <= active[0].numbers["request_cost_ratio"] <= 3.5


def test_cost_floors_are_settable_from_the_cli(monkeypatch):
    seen = {}
    monkeypatch.setattr("infersight.collector._server.serve", lambda settings: seen.setdefault("s", settings))
    result = CliRunner().invoke(main, ["collector", "--no-auth", "--cost-ratio", "3", "--cost-min-excess-share",
                                       "0.2", "--cost-min-excess-usd", "0"])
    assert result.exit_code == 0, result.output
    rule = config_from(seen["s"]).cost_rule
    assert (rule.ratio, rule.min_excess_share, rule.min_excess_usd) == (3.0, 0.2, 0.0)
    assert config_from(Settings()).cost_rule.min_excess_usd == 0.01
    bad = CliRunner().invoke(main, ["collector", "--cost-ratio", "1.2"])
    assert bad.exit_code != 0 and "cost_ratio" in bad.output

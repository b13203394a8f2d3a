"""The pager's promises on the real embedded store, one short scenario each: one page per
incident (hysteresis), a silent reporter never resolves, queues per instance, cost on a small
tenant's own scale and never for one heavy session, and the floors settable from the CLI."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector import Settings
from infersight.collector._cli import main
from infersight.collector.alerts import Evaluator, WebhookNotifier
from infersight.collector.alerts._reads import queue_series
from infersight.collector.alerts._rules import retire_queue_series
from infersight.collector.alerts._setup import config_from
from infersight.collector.store import ClickHouseStore, encode_rows, usd_text
from tests.conftest import wait_for

from .receiver import Receiver

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


def test_queues_are_per_instance_and_a_silent_reporter_pages(store):
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
    # hours later the silent series still pages: two siblings report, neither took its place
    later = evaluator.run_once(NOW + timedelta(hours=3))
    assert not [e for e in later.events if e.state.project == project and e.state.labels["instance"] == "worker-2"]
    assert "worker-2" in firing_instances(store, project)


def firing_instances(store, project):
    rows = store.query("SELECT labels['instance'] AS instance FROM alerts FINAL"
                       " WHERE project = {p:String} AND status = 'firing'", {"p": project})
    return {r["instance"] for r in rows}


def labelled(rows, label, ended_last=False):
    rows = [{**r, "instance_label": label} for r in rows]
    if ended_last:
        rows[-1]["ended"] = True
    return rows


def test_a_deploy_pages_nothing_and_a_clean_stop_retires_its_series(store):
    project = "pager-deploy"
    start = NOW - timedelta(minutes=60)
    sawtooth = [30, 20, 10, 0, 0] * 14
    rows = []
    for i in range(3):  # a rolling deploy at minute 30: each new pod starts a minute before its old one stops
        rows += labelled(depth_rows(project, f"old-{i}", start, sawtooth[:30 + i]), f"pod worker-old-{i}")
        # new-0 is scaled down cleanly at minute 69; the others report to the end
        depths = sawtooth[:40 if i == 0 else 70]
        rows += labelled(depth_rows(project, f"new-{i}", start + timedelta(minutes=29 + i), depths),
                         f"pod worker-new-{i}", ended_last=i == 0)
    store.insert("queue_depth", encode_rows(rows))
    events = replay(store, project, start + timedelta(minutes=30), 60, step=2)
    assert events == []


def test_a_vanished_reporter_pages_once_by_pod_and_resolves_when_the_queue_reports_again(store):
    project = "pager-vanished"
    start = NOW - timedelta(minutes=30)
    rows = labelled(depth_rows(project, "0a7c", start, [5, 0] * 10), "pod worker-5d8, host node-3, pid 7")
    rows += labelled(depth_rows(project, "live", start, [5, 0] * 35), "pod worker-9aa")  # a sibling: no successor
    rows += labelled(depth_rows(project, "b19e", start + timedelta(minutes=40), [5, 0] * 10), "pod worker-x2c")
    store.insert("queue_depth", encode_rows(rows))
    events = replay(store, project, start + timedelta(minutes=20), 40, step=1)
    (fired,) = [e for e in events if e[1] == "firing"]
    assert fired[0] == 5 and fired[2] == "QueueStoppedReporting" and fired[3]["instance"] == "0a7c"
    page = store.query("SELECT summary FROM alert_events WHERE project = {p:String} AND event = 'firing'",
                       {"p": project})
    assert page[0]["summary"].startswith("queue jobs of worker on pod worker-5d8, host node-3, pid 7 stopped")
    # b19e starts at minute 40 (replay minute 20): the queue reports again, the page resolves
    (resolved,) = [e for e in events if e[1] == "resolved"]
    assert 20 <= resolved[0] <= 23 and resolved[3]["instance"] == "0a7c"


def test_an_acknowledged_or_forgotten_silent_reporter_resolves_and_does_not_page_again(store):
    project = "pager-ack"
    start = NOW - timedelta(minutes=30)
    store.insert("queue_depth", encode_rows(depth_rows(project, "gone", start, [5, 0] * 5)
                                            + depth_rows(project, "lost", start, [5, 0] * 5)))
    evaluator = Evaluator(store)
    evaluator.run_once(NOW)
    assert firing_instances(store, project) == {"gone", "lost"}
    assert retire_queue_series(store, {"project": project, "service": "worker", "queue": "jobs", "instance": "gone"})
    events = [e for m in range(0, 10) for e in evaluator.run_once(NOW + timedelta(minutes=m)).events
              if e.state.project == project]
    assert [(e.kind, e.state.labels["instance"]) for e in events] == [("resolved", "gone")]
    assert firing_instances(store, project) == {"lost"}
    # a day without a report: the rule stops looking, and the page does not stay firing for ever
    later = [e for m in range(0, 4) for e in evaluator.run_once(NOW + timedelta(hours=25, minutes=m)).events
             if e.state.project == project]
    assert [(e.kind, e.state.labels["instance"]) for e in later] == [("resolved", "lost")]
    assert "no longer watched" in later[0].state.summary and firing_instances(store, project) == set()


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
    # every figure of the headline is in the details, counted the same way: the hour's costliest
    # trace left out, and said so with what it spent
    left_out = usd_text(small.numbers["left_out_trace_usd"])
    assert small.summary.startswith(f"tenant small spent {usd_text(small.numbers['cost_usd'])} in the last hour"
                                    f" without its costliest trace ({left_out}), ")
    assert f"Spent: the tenant's LLM calls of the last hour, {usd_text(small.numbers['cost_usd'])}" in small.details
    assert "costliest trace (t" in small.details and f", {left_out})" in small.details
    assert f"Usual: the same hour of the last same-type days, measured the same way, " \
           f"{usd_text(small.numbers['baseline_usd'])}." in small.details
    assert "Excess driven by (without the trace left out) routes: r-small" in small.details


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


def test_cost_floors_and_the_burst_allowance_are_settable_from_the_cli(monkeypatch):
    seen = {}
    monkeypatch.setattr("infersight.collector._server.serve", lambda settings: seen.setdefault("s", settings))
    result = CliRunner().invoke(main, ["collector", "--no-auth", "--cost-ratio", "3", "--cost-min-excess-share",
                                       "0.2", "--cost-min-excess-usd", "0", "--outage-burst-minutes", "4"])
    assert result.exit_code == 0, result.output
    rule = config_from(seen["s"]).cost_rule
    assert (rule.ratio, rule.min_excess_share, rule.min_excess_usd) == (3.0, 0.2, 0.0)
    assert config_from(seen["s"]).error_rule.burst_minutes == 4
    assert config_from(Settings()).cost_rule.min_excess_usd == 0.01
    assert config_from(Settings()).error_rule.burst_minutes == 3
    bad = CliRunner().invoke(main, ["collector", "--cost-ratio", "1.2"])
    assert bad.exit_code != 0 and "cost_ratio" in bad.output
    bad = CliRunner().invoke(main, ["collector", "--outage-burst-minutes", "5"])
    assert bad.exit_code != 0 and "outage-burst-minutes" in bad.output


def test_a_clean_sdk_shutdown_and_restart_page_nobody(collector, store):
    """Two processes of one service in turn, each with its own instance id, over real sockets: the
    first is replaced by the second, and the second stopped cleanly."""
    receiver = Receiver()
    try:
        for instance in ("3f9a", "c071"):
            resource = Resource.create({"service.name": "worker", "service.instance.id": instance,
                                        "k8s.pod.name": f"worker-{instance}"})
            sdk.init(service_name="worker", endpoint=collector.url, metrics_interval_s=0.2,
                     tracer_provider=TracerProvider(resource=resource))
            sdk.watch_queue("jobs", lambda: 3.0, lambda: 1.0)
            assert wait_for(lambda i=instance: queue_rows_of(store, collector.project, i), timeout_s=60)
            sdk.shutdown()
        rows = queue_rows_of(store, collector.project, "3f9a")
        assert rows[-1]["instance_label"].startswith("pod worker-3f9a, host ")  # and the pid
        evaluator = Evaluator(store, [WebhookNotifier(receiver.url + "/hook", external_url="https://obs.example.com")])
        now = datetime.now(timezone.utc)
        for minute in range(6, 12):
            evaluator.run_once(now + timedelta(minutes=minute))
        pages = [a for body in receiver.bodies("/hook") for a in body["alerts"]
                 if a["labels"].get("project") == collector.project]
        assert not [a for a in pages if a["labels"]["instance"] == "3f9a"]  # replaced by c071
        assert any(r["ended"] for r in queue_rows_of(store, collector.project, "c071"))  # the SDK said so
        assert pages == []
    finally:
        receiver.stop()


def queue_rows_of(store, project, instance):
    return store.query("SELECT instance_label, ended FROM queue_depth WHERE project = {p:String}"
                       " AND instance = {i:String} ORDER BY ts", {"p": project, "i": instance})


@pytest.mark.parametrize("backend", ["chdb", "clickhouse"])
def test_how_a_series_ended_and_its_pod_are_read_back_on_both_backends(backend, store, clickhouse_http):
    target = store if backend == "chdb" else ClickHouseStore(
        f"http://default:@{clickhouse_http[len('http://'):]}/pager")
    try:
        project = f"pager-read-{backend}"
        rows = labelled(depth_rows(project, "9f1c", NOW - timedelta(minutes=20), [4, 3, 2]), "pod worker-7f9",
                        ended_last=True)
        target.insert("queue_depth", encode_rows(rows))
        found = {k: v for k, v in queue_series(target, NOW, timedelta(hours=1)).items() if k[0] == project}
        (read,) = found.values()
        assert (read.label, read.first_at, [s.ended for s in read.samples]) == (
            "pod worker-7f9", NOW - timedelta(minutes=20), [False, False, True])
        assert retire_queue_series(target, {"project": project, "service": "worker", "queue": "jobs",
                                            "instance": "9f1c"})
    finally:
        if target is not store:
            target.close()


def test_a_runaway_loop_in_one_trace_pages_by_its_own_spend_and_a_usual_long_session_does_not(store):
    # "loop": a tenant whose sessions are short, until one trace calls the model every minute for
    # hours at twice the tenant's usual hour; "habit": a tenant that runs such a session every day;
    # "rare": one that ran a larger one 12 days ago (such sessions come seldom: three weeks are
    # remembered, not one); "busy": a tenant of twice loop's traffic whose loop spends 1.5x its
    # usual hour, 2.5x with the tenant's own calls (a loop on a busy tenant is judged on the
    # tenant's whole hour, as the tenant's own spend is)
    project = "pager-runaway"
    rng = random.Random(12)
    rows, at, n = [], NOW - timedelta(days=15), 0
    while at < NOW:
        for tenant, calls in (("loop", 1), ("habit", 1), ("rare", 1), ("busy", 2)):
            for _ in range(calls):
                n += 1
                rows.append({"project": project, "ts": ts(at), "service": "agent", "operation": "chat",
                             "tenant": tenant, "route": f"r-{tenant}", "trace_id": f"t{n}", "status": "ok",
                             "cost_usd": 0.01 * rng.uniform(0.8, 1.2)})
        at += timedelta(minutes=2)

    def session(tenant, trace, start, minutes, usd=0.01):  # a step a minute
        return [{"project": project, "ts": ts(start + timedelta(minutes=i)), "service": "agent", "operation": "chat",
                 "tenant": tenant, "route": f"r-{tenant}", "trace_id": trace, "status": "ok", "cost_usd": usd}
                for i in range(minutes)]
    rows += session("loop", "loop-1", NOW - timedelta(minutes=70), 70)
    rows += session("busy", "busy-loop", NOW - timedelta(minutes=70), 70, usd=0.015)
    rows += session("rare", "rare-old", NOW - timedelta(days=12, minutes=70), 70, usd=0.012)
    rows += session("rare", "rare-1", NOW - timedelta(minutes=70), 70)
    for day in range(15):  # habit's daily session, today's running now
        rows += session("habit", f"habit-{day}", NOW - timedelta(days=day, minutes=70), 70)
    store.insert("llm_spans", encode_rows(rows))
    evaluator = Evaluator(store)
    active = {a.labels["tenant"]: a for a in evaluator.run_once(NOW).active if a.labels["project"] == project}
    assert [active[t].labels for t in sorted(active)] == [
        {"project": project, "tenant": t, "scope": "trace"} for t in ("busy", "loop")]
    page = active["loop"]
    assert "one trace (loop-1) spent $0.6000 in the last hour" in page.summary and "still spending" in page.summary
    began = NOW - timedelta(minutes=70)  # its first call, before the hour read
    assert page.since == began and f"(since {began:%H:%M} UTC)" in page.summary
    # the headline's figures: the tenant's hour with the trace, against its usual hour
    assert 2.5 <= page.numbers["ratio"] <= 3.5
    assert page.numbers["key_cost_usd"] == pytest.approx(page.numbers["trace_cost_usd"] + 0.3, abs=0.05)
    assert f"with it the tenant spent {usd_text(page.numbers['key_cost_usd'])}" in page.summary
    assert 2.0 <= active["busy"].numbers["ratio"] <= 3.0
    assert active["busy"].numbers["trace_cost_usd"] < 2 * active["busy"].numbers["baseline_usd"]
    # it holds while the loop spends, and once it stops the alert clears
    assert sorted(a.labels["tenant"] for a in evaluator.run_once(NOW + timedelta(seconds=20)).active
                  if a.labels["project"] == project) == ["busy", "loop"]
    later = evaluator.run_once(NOW + timedelta(minutes=15))
    assert [(e.kind, e.state.labels.get("tenant")) for e in later.events if e.state.project == project] == []
    assert [e.kind for m in (16, 17, 18) for e in evaluator.run_once(NOW + timedelta(minutes=m)).events
            if e.state.project == project] == ["resolved", "resolved"]

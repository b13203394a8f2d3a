"""The second traffic shape has what it claims: deploys that replace every replica's process
with a new instance id (the old one's last point marked ended), a weekly kill without the mark,
long one-trace agent sessions, and a nightly batch tenant quiet by day."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench.pager import incidents as pi
from bench.pager import traffic as pt
from bench.pager.traffic_b import BATCH_TENANT, SEEDS, TrafficB


def test_deploys_replace_each_replica_with_a_new_instance_and_mark_the_old_one_ended():
    traffic = TrafficB("b", SEEDS[0], 0.001)
    week = 4 * 7 * pt.MINUTES_PER_DAY
    rows = traffic.queue_rows(True, first_minute=week)
    by_slot: dict[str, list[dict]] = {}
    for row in rows:
        by_slot.setdefault(str(row["instance"]).split("@")[0], []).append(row)
    assert sorted(by_slot) == ["worker-0", "worker-1", "worker-2"]
    for slot_rows in by_slot.values():
        instances = list(dict.fromkeys(r["instance"] for r in slot_rows))
        assert len(instances) >= 5  # five weekday deploys in the week
        ended = [r["instance"] for r in slot_rows if r["ended"]]
        assert len(ended) >= len(instances) - 2  # every process but the last, and a killed one, stops cleanly
        assert all(r["instance_label"].startswith("pod worker-") for r in slot_rows)


def test_long_sessions_are_single_traces_and_the_batch_tenant_runs_at_night():
    traffic = TrafficB("b", SEEDS[0], 0.01)
    spans = [json.loads(line) for day in (28, 29) for line in traffic.day_rows(day).splitlines()]
    traces = Counter(s["trace_id"] for s in spans if s.get("operation") == "chat")
    assert max(traces.values()) >= 40  # a session of 1-4 hours, a step every 1-2 minutes
    batch_hours = Counter(s["ts"][11:13] for s in spans if s["tenant"] == BATCH_TENANT)
    assert set(batch_hours) == {"01"}


@pytest.mark.parametrize("make", [pt.Traffic, TrafficB], ids=["a", "b"])
def test_both_shapes_carry_the_model_change_of_the_incident_week(make):
    # generator b draws its calls with its own retry loop, which once left the model change out:
    # the incident it was scored on never happened
    (change,) = [i for i in pi.LIBRARY if i.name.startswith("10x pricier")]
    day = (change.onset - pt.START).days
    traffic = make("i", SEEDS[0] if make is TrafficB else 1, 0.05, pi.modifiers())
    spans = [json.loads(line) for line in traffic.day_rows(day).splitlines()]
    during = [s for s in spans if s.get("route") == change.target and s.get("operation") == "chat"
              and change.onset.strftime("%Y-%m-%d %H:%M") <= s["ts"][:16] < change.end.strftime("%Y-%m-%d %H:%M")]
    assert during and {s["request_model"] for s in during} == {"claude-opus"}
    normal = make("n", SEEDS[0] if make is TrafficB else 1, 0.05)
    assert "claude-opus" not in {json.loads(line).get("request_model") for line in normal.day_rows(day).splitlines()}

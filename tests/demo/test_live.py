"""The demo's live app, as the collector sees it: conversations of a few turns, and users' thumbs
through ``sdk.feedback``, more of them down where the request failed."""

from __future__ import annotations

import threading

from infersight import sdk
from infersight.demo import FakeLLM, run_traffic
from tests.conftest import LiveCollector, wait_for


def test_live_requests_are_turns_of_sessions_and_some_get_thumbs(collector: LiveCollector, store):
    llm = FakeLLM(latency_s=(0.01, 0.05), error_rate=0.4, seed=3).start()
    stop = threading.Event()
    sdk.init(service_name="support-bot", endpoint=collector.url, metrics_interval_s=60)
    params = {"project": collector.project}

    def sessions_and_feedback() -> bool:
        sdk.force_flush()
        turns = store.query("SELECT session_id, count() AS n FROM llm_spans WHERE project = {project:String}"
                            " AND kind = 'llm' GROUP BY session_id", params)
        thumbs = store.query("SELECT count() AS n FROM feedback WHERE project = {project:String}"
                             " AND source = 'sdk'", params)[0]["n"]
        return any(t["n"] >= 2 for t in turns) and thumbs >= 3

    # Turns a tenth of a second apart and 40% of calls failing, so both show within seconds; the
    # deadline is generous, the traffic stops as soon as the store holds them.
    traffic = threading.Thread(target=run_traffic, args=(llm.url, stop, lambda now: 5.0),
                               kwargs={"turn_gap_s": 0.1}, daemon=True)
    traffic.start()
    try:
        assert wait_for(sessions_and_feedback, timeout_s=120, interval_s=0.5)
    finally:
        stop.set()
        traffic.join(timeout=10)
        sdk.shutdown()
        llm.stop()

    def calls_and_feedback() -> tuple[list[dict], list[dict]]:
        calls = store.query("SELECT session_id, user_id, trace_id, error_type FROM llm_spans"
                            " WHERE project = {project:String} AND kind = 'llm'", params)
        feedback = store.query("SELECT trace_id, value, created_by FROM feedback WHERE project = {project:String}"
                               " AND source = 'sdk'", params)
        return calls, feedback

    # Feedback is stored as it is posted, spans once the spool has written them: wait for both.
    assert wait_for(lambda: (read := calls_and_feedback())
                    and {f["trace_id"] for f in read[1]} <= {c["trace_id"] for c in read[0]})
    calls, feedback = calls_and_feedback()
    assert all(c["session_id"].startswith("live-") for c in calls)
    users = {}
    for c in calls:
        users.setdefault(c["session_id"], set()).add(c["user_id"])
    assert all(len(u) == 1 for u in users.values())  # a session is one user's
    assert max(sum(c["session_id"] == s for c in calls) for s in users) <= 4
    failed = {c["trace_id"] for c in calls if c["error_type"]}
    assert {f["trace_id"] for f in feedback} <= {c["trace_id"] for c in calls}
    on_failed = [f["value"] for f in feedback if f["trace_id"] in failed]
    assert on_failed and sum(on_failed) == 0  # a failed request is rated down

"""The three paging rules replayed over synthetic weeks with the clock under test control."""

from __future__ import annotations

from datetime import timedelta

from infersight.collector.alerts._cost import CostRule
from infersight.collector.alerts._error_rate import ErrorRateRule
from infersight.collector.alerts._queue import DepthSample, QueueRule

from .synthetic import START, hourly_cost, minute_traffic


def replay_error_rule(traffic, rule, start, end, step=timedelta(minutes=1)):
    """Times at which the rule's alert is active."""
    active = []
    now = start
    while now <= end:
        counts = {lb: traffic.counts(now, lb) for lb in rule.lookbacks()}
        if rule.evaluate("p", "svc", counts, now):
            active.append(now)
        now += step
    return active


def test_normal_week_never_pages():
    traffic = minute_traffic(7.5, seed=11)
    rule = ErrorRateRule()
    assert replay_error_rule(
        traffic, rule, START + timedelta(hours=6), START + timedelta(days=7.5), timedelta(minutes=5)
    ) == []


def test_a_few_failures_at_night_do_not_page():
    night = START + timedelta(days=2, hours=3)

    def rate(t):
        return 0.5 if night <= t < night + timedelta(minutes=3) else 0.0

    traffic = minute_traffic(3, base=2.0, error_rate=rate, seed=3)  # ~1 request a minute at night
    assert replay_error_rule(traffic, ErrorRateRule(), night, night + timedelta(hours=2)) == []


def test_provider_outage_pages_within_five_minutes_and_resolves_after():
    onset = START + timedelta(days=2, hours=14)
    end = onset + timedelta(minutes=40)

    def rate(t):
        return 0.95 if onset <= t < end else 0.002

    traffic = minute_traffic(3, error_rate=rate, seed=5)
    active = replay_error_rule(traffic, ErrorRateRule(), onset - timedelta(hours=1), end + timedelta(hours=1))
    assert active, "the outage never paged"
    assert active[0] - onset <= timedelta(minutes=5)
    # the 1 h pair clears 5 minutes after the end; the 6 h pair's 30-minute window holds a little longer
    assert active[-1] - end <= timedelta(minutes=31)


def test_tenfold_error_rate_pages_through_the_one_hour_window():
    # From 1% to 10% errors at a 99% SLO: a 10x burn. Detection on the 1 h window takes
    # 60 min x 14.4 / burn; the 6 h window pair also holds while it lasts.
    onset = START + timedelta(days=2, hours=10)

    def rate(t):
        return 0.20 if onset <= t < onset + timedelta(hours=3) else 0.01

    traffic = minute_traffic(3, error_rate=rate, seed=6)
    rule = ErrorRateRule(slo=0.99)
    active = replay_error_rule(traffic, rule, onset, onset + timedelta(hours=4), timedelta(minutes=2))
    assert active and active[0] - onset <= timedelta(minutes=50)
    assert replay_error_rule(traffic, rule, onset - timedelta(hours=12), onset, timedelta(minutes=10)) == []


def test_alert_body_counts_transient_and_logic_errors():
    from infersight.collector.alerts._error_rate import Counts

    rule = ErrorRateRule()
    counts = {lb: Counts(1000, 300, transient=250, logic=50) for lb in rule.lookbacks()}
    alert = rule.evaluate("p", "checkout", counts, START, top_labels={"model": "gpt-4o"})
    assert alert is not None
    assert (alert.numbers["transient_errors"], alert.numbers["logic_errors"]) == (250, 50)
    assert "250 transient" in alert.details and "Most affected model: gpt-4o" in alert.details
    assert alert.labels == {"project": "p", "service": "checkout"}


def samples(depths, start=START, every=timedelta(minutes=1), age=None):
    return [DepthSample(start + i * every, d, age) for i, d in enumerate(depths)]


def queue_alert(depths, **kw):
    series = samples(depths, **kw)
    return QueueRule().evaluate("p", "worker", "jobs", series, series[-1].ts + timedelta(seconds=30))


def test_stalled_queue_pages():
    alert = queue_alert([40] * 12)
    assert alert is not None and "stalled" in alert.summary


def test_growing_queue_pages():
    alert = queue_alert([10 + 5 * i for i in range(12)])
    assert alert is not None and "growing" in alert.summary


def test_busy_but_draining_queue_is_quiet():
    assert queue_alert([300, 280, 350, 310, 290, 400, 330, 320, 360, 300, 310, 305]) is None


def test_queue_that_touches_zero_is_quiet():
    assert queue_alert([5, 6, 7, 0, 8, 9, 10, 11, 12, 13, 14, 15]) is None


def test_too_few_samples_do_not_page():
    assert queue_alert([40] * 5) is None


def test_old_oldest_item_pages_even_when_depth_moves():
    alert = queue_alert([3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2], age=1800.0)
    assert alert is not None and alert.numbers["oldest_age_s"] == 1800.0


def test_queue_that_stops_reporting_is_reported():
    series = samples([4] * 12)
    alert = QueueRule().evaluate("p", "worker", "jobs", series, series[-1].ts + timedelta(minutes=20))
    assert alert is not None and alert.name == "QueueStoppedReporting"


def cost_alerts(hourly, start, end, rule=CostRule()):
    """Hours (evaluated at :05) at which the cost alert is active."""
    out = []
    now = start
    while now <= end:
        history = {h: c for h, c in hourly.items() if h < now.replace(minute=0)}
        alert, _ = rule.evaluate("p", "acme", history, now)
        if alert:
            out.append((now, alert))
        now += timedelta(hours=1)
    return out


def test_usual_monday_peak_does_not_page():
    hourly = hourly_cost(5, seed=4)
    monday = START + timedelta(weeks=4)
    assert cost_alerts(hourly, monday + timedelta(minutes=5), monday + timedelta(days=1)) == []


def test_normal_weeks_never_page_once_three_weeks_of_history_exist():
    # Verdicts only look back, so one pass over the history equals evaluating hour by hour.
    # With less history the hour-of-day fallback cannot know that Mondays are busy.
    for seed in (9, 10, 12):
        hourly = hourly_cost(6, seed=seed)
        verdicts = CostRule().verdicts(hourly, START + timedelta(weeks=6))
        paging = [
            later.hour for earlier, middle, later in zip(verdicts, verdicts[1:], verdicts[2:], strict=False)
            if later.hour >= START + timedelta(weeks=3) and sum(v.anomalous for v in (earlier, middle, later)) >= 2
        ]
        assert paging == [], f"seed {seed}"


def test_tripled_spend_for_two_hours_pages_and_names_the_numbers():
    spike = START + timedelta(weeks=4, days=2, hours=14)  # a Wednesday afternoon
    hourly = hourly_cost(5, seed=4, multiplier=lambda t: 3.0 if spike <= t < spike + timedelta(hours=2) else 1.0)
    active = cost_alerts(hourly, spike, spike + timedelta(hours=6, minutes=5))
    assert active, "a tripled spend did not page"
    first_at, alert = active[0]
    assert first_at <= spike + timedelta(hours=2, minutes=5)  # as soon as two complete hours are in
    assert alert.labels == {"project": "p", "tenant": "acme"}
    assert 2.5 <= alert.numbers["cost_usd"] / alert.numbers["baseline_usd"] <= 3.5
    assert alert.since == spike
    # resolves once two of the last three hours are normal again
    assert all(at <= spike + timedelta(hours=3, minutes=5) for at, _ in active)


def test_anomalous_hours_stay_out_of_later_baselines():
    spike = START + timedelta(weeks=3, days=1, hours=10)
    hourly = hourly_cost(5, seed=4, multiplier=lambda t: 4.0 if spike <= t < spike + timedelta(hours=3) else 1.0)
    verdicts = {v.hour: v for v in CostRule().verdicts(hourly, START + timedelta(weeks=5))}
    assert verdicts[spike].anomalous and verdicts[spike + timedelta(hours=1)].anomalous
    # a week later the same hour is judged against a baseline without the incident
    later = verdicts[spike + timedelta(weeks=1)]
    assert later.baseline_usd is not None and later.baseline_usd < hourly[spike] / 2


def test_short_history_falls_back_to_hour_of_day():
    hourly = hourly_cost(0.5, seed=3)  # 3.5 days: no same-hour-of-week history yet
    verdicts = CostRule().verdicts(hourly, START + timedelta(days=3, hours=12))
    judged = [v for v in verdicts if v.baseline_usd is not None]
    assert judged and judged[0].hour == START + timedelta(days=3)

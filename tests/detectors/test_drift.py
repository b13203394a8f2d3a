"""Numeric drift: quiet without change, fires on a shift, names what moved, says when it cannot judge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infersight.detectors import NotFittedError, NumericDriftDetector

from .corpora import numeric_window

SEEDS = 30


@pytest.fixture(scope="module")
def fitted() -> NumericDriftDetector:
    return NumericDriftDetector().fit(numeric_window(np.random.default_rng(7), 4000))


def test_stays_quiet_without_change_across_seeds():
    # alpha = 0.01 per evaluation bounds the false alarms: 0.3 expected in 30 evaluations and
    # P(3 or more) < 0.4% for independent ones. Each seed has its own reference and calibration.
    alarms = []
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        detector = NumericDriftDetector(random_state=seed).fit(numeric_window(rng, 1500))
        report = detector.detect(numeric_window(rng, 800))
        assert report.drifted is not None
        if report.drifted:
            alarms.append((seed, report.reason))
    assert len(alarms) <= 2, alarms


def test_fires_on_longer_answers_and_names_them(fitted):
    report = fitted.detect(numeric_window(np.random.default_rng(1), 800, output_scale=1.5))
    assert report.drifted is True
    moved = {f.feature: f for f in report.moved}
    assert "output_tokens" in moved
    assert "input_tokens" not in moved
    shift = moved["output_tokens"]
    assert shift.direction == "up"
    assert shift.median_current > 1.3 * shift.median_reference
    assert shift.distance > shift.threshold
    assert "output_tokens up: median" in report.reason
    [detection, *_] = [d for d in report.detections() if d.label == "drift.numeric.output_tokens"]
    assert detection.detector == "drift.numeric"
    assert detection.evidence.startswith("output_tokens up: median ")
    assert 0 < detection.score < 1


def test_fires_on_shorter_prompts_with_direction_down(fitted):
    report = fitted.detect(numeric_window(np.random.default_rng(2), 800, input_scale=0.5))
    assert report.drifted is True
    assert report.moved[0].feature in {"input_tokens", "cost_usd"}
    assert {f.feature: f.direction for f in report.moved}["input_tokens"] == "down"


def test_fires_on_a_queue_and_names_ttft(fitted):
    report = fitted.detect(numeric_window(np.random.default_rng(3), 1200, queue_scale=4.0))
    assert report.drifted is True
    assert "ttft_s" in {f.feature for f in report.moved}
    assert "output_tokens" not in {f.feature for f in report.moved}


def test_too_few_requests_gives_no_verdict_and_says_so(fitted):
    report = fitted.detect(numeric_window(np.random.default_rng(4), 499, output_scale=3.0))
    assert report.drifted is None
    assert report.reason == "no verdict: 499 requests in the current window, at least 500 needed on each side"
    assert report.detections() == []
    small = NumericDriftDetector().fit(numeric_window(np.random.default_rng(5), 300))
    assert "300 requests in the reference window" in small.detect(numeric_window(np.random.default_rng(6), 900)).reason


def test_a_feature_with_too_few_values_is_left_out_not_the_others(fitted):
    window = numeric_window(np.random.default_rng(8), 800, output_scale=1.5)
    window["ttft_s"] = [None] * 800  # nothing streamed this hour
    report = fitted.detect(window)
    assert report.drifted is True
    ttft = {f.feature: f for f in report.features}["ttft_s"]
    assert ttft.drifted is None and math.isnan(ttft.distance)
    del window["cost_usd"]  # a column missing altogether
    assert {f.feature: f.drifted for f in fitted.detect(window).features}["cost_usd"] is None


def test_threshold_shrinks_with_more_data_and_never_goes_below_the_floor(fitted):
    small, large = fitted.threshold("output_tokens", 500), fitted.threshold("output_tokens", 5000)
    assert small > large >= fitted.min_distance
    assert fitted.threshold("output_tokens", 10**9) == fitted.min_distance


def test_score_is_the_raw_distance_per_feature(fitted):
    same = fitted.score(numeric_window(np.random.default_rng(9), 800))
    moved = fitted.score(numeric_window(np.random.default_rng(9), 800, output_scale=2.0))
    assert set(same) == set(fitted.features)
    assert moved["output_tokens"] > 5 * same["output_tokens"]


def test_is_deterministic():
    window = numeric_window(np.random.default_rng(10), 2000)
    current = numeric_window(np.random.default_rng(11), 800, output_scale=1.3)
    first = NumericDriftDetector().fit(window).detect(current)
    again = NumericDriftDetector().fit(window).detect(current)
    assert first == again


def test_unfitted_use_raises_a_clear_error():
    with pytest.raises(NotFittedError, match="not fitted yet: call 'fit'"):
        NumericDriftDetector().detect(numeric_window(np.random.default_rng(0), 600))


def test_columns_of_different_lengths_are_rejected():
    with pytest.raises(ValueError, match="one value per request"):
        NumericDriftDetector().fit({"input_tokens": [1, 2, 3], "output_tokens": [1, 2]})

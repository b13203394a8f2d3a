"""The repetition detector on generated continuations: loops flagged, false alarms, calibration."""

from __future__ import annotations

import random
import time

import pytest

from infersight.detectors import RepetitionDetector, SpanText
from infersight.detectors._repetition import REPEAT_CALIBRATION, false_alarm_rate_of, repeat_threshold

from .conftest import add_report_section
from .corpora import Score, markdown, repetition_scores
from .loop_corpus import HUMAN, NUCLEUS, calibration, calibration_corpora, prose, raw_repeat_score, sample


@pytest.fixture(scope="module")
def scores() -> dict[str, Score]:
    found = repetition_scores()
    add_report_section("repetition on generated continuations (tests/detectors/loop_corpus.py)", markdown(found))
    return {s.corpus.split()[0]: s for s in found}


@pytest.mark.parametrize("corpus", ["greedy", "beam"])
def test_at_least_85_percent_of_loops_are_flagged(scores, corpus):
    assert scores[corpus].recall >= 0.85, markdown([scores[corpus]])


@pytest.mark.parametrize("corpus", ["nucleus", "human"])
def test_at_most_half_a_percent_of_ordinary_answers_are_flagged(scores, corpus):
    assert scores[corpus].false_alarm_rate <= 0.005, markdown([scores[corpus]])


def test_the_shipped_calibration_is_what_the_corpora_give():
    assert tuple(calibration(calibration_corpora())) == REPEAT_CALIBRATION


@pytest.mark.parametrize("rate", [0.001, 0.005, 0.02, 0.1])
def test_a_threshold_is_a_false_alarm_rate_on_text_it_was_not_calibrated_on(rate):
    threshold = repeat_threshold(rate)
    assert false_alarm_rate_of(threshold) <= rate
    for kinds, seed in ((NUCLEUS, 7), (HUMAN, 8)):
        texts = sample(kinds, 1000, seed)
        flagged = sum(1 for t in texts if raw_repeat_score(t) >= threshold)
        # 1,000 fresh answers: allow the sampling error of a rate this small (3 sigma, +1).
        sigma = (rate * (1 - rate) * 1000) ** 0.5
        assert flagged <= rate * 1000 + 3 * sigma + 1, (rate, flagged)


def test_the_false_alarm_rate_is_the_knob():
    text = prose(random.Random(11), 10)
    loose, strict = RepetitionDetector(false_alarm_rate=0.5), RepetitionDetector(false_alarm_rate=0.001)
    assert loose.threshold < strict.threshold
    assert sum(bool(loose.detect(SpanText(output_text=prose(random.Random(i), 8)))) for i in range(200)) > 20
    assert strict.detect(SpanText(output_text=text)) == []


def test_number_heavy_lists_are_not_loops():
    rng = random.Random(5)
    listings = "\n".join(f"{rng.randint(2008, 2023)} Toyota Camry LE, {rng.randint(5, 180) * 1000:,} miles, "
                         f"${rng.randint(40, 450) * 100:,}, Dallas" for _ in range(40))
    table = "| Player | G | PTS |\n|---|---:|---:|\n" + "\n".join(
        f"| Player {i} | {rng.randint(10, 82)} | {rng.uniform(2, 31):.1f} |" for i in range(40))
    for text in (listings, table):
        assert RepetitionDetector().detect(SpanText(output_text=text)) == [], text[:40]


def test_cost_does_not_grow_with_the_answer():
    # Both rules read a bounded tail: a 1 MB answer costs about what a 16 KB one does. The
    # baseline is measured here, so the verdict does not depend on the machine's speed. What
    # reads the whole answer is one C-speed count of code fences (~0.5 ms a MB on a loaded
    # machine), which next to prose the probes skip (~0.07 ms) is 5-7x: tokenising the MB
    # would be over 1,000x.
    detector = RepetitionDetector()
    small, large = prose(random.Random(1), 120)[:16_000], prose(random.Random(2), 8000)[:1_000_000]

    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            detector.detect(SpanText(output_text=text))
            best = min(best, time.perf_counter() - start)
        return best

    assert cost(large) < cost(small) * 20

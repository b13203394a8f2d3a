"""Text drift: quiet on the same topics, fires on a new one and names its words."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infersight.detectors import NotFittedError, TextDriftDetector

from .corpora import TEXT_BASE, TOPICS, text_corpus

SEEDS = 20


def test_stays_quiet_on_the_same_topics_across_seeds():
    alarms = []
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        detector = TextDriftDetector(random_state=seed).fit(text_corpus(rng, 1000, TEXT_BASE))
        report = detector.detect(text_corpus(rng, 500, TEXT_BASE), channel="prompts")
        assert report.drifted is not None
        if report.drifted:
            alarms.append((seed, report.reason))
    assert len(alarms) <= 1, alarms  # alpha = 0.01: 0.2 expected in 20 evaluations, P(2+) < 2%


def test_fires_on_a_new_topic_and_names_its_words():
    rng = np.random.default_rng(42)
    detector = TextDriftDetector().fit(text_corpus(rng, 1000, TEXT_BASE))
    current = text_corpus(rng, 600, {"account": 0.35, "shipping": 0.35, "billing": 0.3})
    report = detector.detect(current, channel="prompts")
    assert report.drifted is True
    assert report.auc > report.threshold >= detector.min_auc
    assert len(report.current_terms) == detector.n_terms
    assert all(t.term in TOPICS["billing"] for t in report.current_terms)
    assert all(t.share_current > t.share_reference for t in report.current_terms)
    assert all(t.share_current < t.share_reference for t in report.reference_terms)
    assert {t.term for t in report.reference_terms} & set(TOPICS["account"] + TOPICS["shipping"])
    [detection] = report.detections()
    assert detection.label == "drift.text.prompts"
    assert detection.evidence.startswith("prompts AUC ")
    assert report.current_terms[0].term in detection.evidence
    assert 0 < detection.score < 1


def test_too_few_texts_gives_no_verdict_and_says_so():
    rng = np.random.default_rng(3)
    detector = TextDriftDetector().fit(text_corpus(rng, 1000, TEXT_BASE))
    current = [*text_corpus(rng, 499, {"billing": 1.0}), "", "   ", None]
    report = detector.detect(current, channel="outputs")
    assert report.drifted is None and math.isnan(report.auc)
    assert report.reason == ("no verdict: 499 outputs with text in the current window, "
                             "at least 500 needed on each side")
    assert report.detections() == []
    assert math.isnan(detector.score(current))


def test_separates_cjk_text_by_character():
    rng = np.random.default_rng(5)
    weather = "今天天气很好我们去公园散步"
    invoice = "请帮我查询发票和退款的进度"

    def docs(chars: str, n: int) -> list[str]:
        return ["".join(rng.choice(list(chars + "的了是在我有他这"), 20)) for _ in range(n)]

    detector = TextDriftDetector().fit(docs(weather, 600))
    report = detector.detect(docs(weather, 300) + docs(invoice, 300))
    assert report.drifted is True
    assert all(t.term in invoice for t in report.current_terms)


def test_score_is_the_raw_auc():
    rng = np.random.default_rng(6)
    detector = TextDriftDetector().fit(text_corpus(rng, 800, TEXT_BASE))
    assert 0.3 < detector.score(text_corpus(rng, 600, TEXT_BASE)) < 0.6
    assert detector.score(text_corpus(rng, 600, {"billing": 1.0})) > 0.95


def test_is_deterministic():
    rng = np.random.default_rng(8)
    reference, current = text_corpus(rng, 600, TEXT_BASE), text_corpus(rng, 520, {"account": 1.0})
    first = TextDriftDetector().fit(reference).detect(current)
    assert first == TextDriftDetector().fit(reference).detect(current)


def test_unfitted_use_raises_a_clear_error():
    with pytest.raises(NotFittedError, match="TextDriftDetector is not fitted yet"):
        TextDriftDetector().score(["hello"] * 600)

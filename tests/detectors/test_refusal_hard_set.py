"""Precision and recall of the refusal rules on the hand-written hard set, per language."""

from __future__ import annotations

import pytest

from .conftest import add_report_section
from .corpora import Score, markdown, refusal_scores, refusal_verdicts
from .refusal_cases import CASES, HELD_OUT, LANGUAGES

REQUIRED = ["ar", "de", "en", "es", "fr", "hi", "it", "ja", "ko", "pt", "ru", "zh"]


@pytest.fixture(scope="module")
def scores() -> dict[tuple[str, str], Score]:
    found = refusal_scores(CASES, "hard set") + refusal_scores(HELD_OUT, "held out")
    add_report_section("refusal precision / recall per language (tests/detectors/refusal_cases.py)",
                       markdown(found))
    return {(s.corpus, s.detector): s for s in found}


def test_the_set_covers_every_language_with_refusals_partials_and_lookalikes():
    assert LANGUAGES == REQUIRED
    for lang in REQUIRED:
        truths = {truth for case_lang, truth, _ in CASES if case_lang == lang}
        assert truths == {"refusal", "partial", "none"}, lang


@pytest.mark.parametrize("corpus", ["hard set", "held out"])
def test_precision_and_recall_overall(scores, corpus):
    score = scores[(corpus, "refusal (all)")]
    assert score.precision >= 0.9, markdown([score])
    assert score.recall >= 0.8, markdown([score])


@pytest.mark.parametrize("lang", REQUIRED)
def test_no_language_is_left_behind(scores, lang):
    # Each language has a dozen cases: one miss or false alarm is allowed, two are not.
    score = scores[("hard set", f"refusal ({lang})")]
    assert score.fn + score.fp <= 1, markdown([score])


def test_partial_refusals_are_labelled_partial():
    said = [said for _, truth, said in refusal_verdicts(CASES) if truth == "partial"]
    assert said.count("partial") >= 0.9 * len(said), said

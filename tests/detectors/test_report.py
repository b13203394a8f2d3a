"""Precision and recall of every detector on generated corpora, printed in the test summary."""

from __future__ import annotations

import pytest

from .conftest import add_report_section
from .corpora import Score, markdown, report


@pytest.fixture(scope="module")
def scores() -> dict[str, Score]:
    found = report(quick=True)
    add_report_section("detector precision / recall on generated corpora (tests/detectors/corpora.py)",
                       markdown(found))
    return {s.detector: s for s in found}


# Floors for the quick corpora, under what they measure today (see the printed table), so a
# regression fails here while the corpora's randomness does not.
FLOORS = {
    "drift.numeric": (0.95, 0.9),
    "drift.text": (0.95, 0.9),
    "cost_loop": (0.8, 0.99),
    "context_stuffing": (0.9, 0.7),
    "repetition": (0.95, 0.9),
    "json": (0.95, 0.95),
    "refusal": (0.95, 0.9),
}


@pytest.mark.parametrize("detector", list(FLOORS))
def test_precision_and_recall_stay_above_their_floors(scores, detector):
    score = scores[detector]
    precision, recall = FLOORS[detector]
    assert score.precision >= precision, markdown([score])
    assert score.recall >= recall, markdown([score])


def test_drift_names_the_shifted_feature(scores):
    numeric = scores["drift.numeric"]
    assert numeric.note == f"shifted feature named in {numeric.tp}/{numeric.tp}"

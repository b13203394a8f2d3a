"""The repetition detector's probes skip text only where the full rules would find nothing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight.detectors import RepetitionDetector, SpanText
from infersight.detectors import _repetition as repetition
from infersight.detectors._repeat_probe import may_loop

from .loop_corpus import corpora
from .texts import NORMAL_TEXTS

detector = RepetitionDetector()


def detections(text: str, **span: object) -> list[tuple[str, float, str]]:
    return [(d.label, d.score, d.evidence) for d in detector.detect(SpanText(output_text=text, **span))]


@pytest.fixture
def unscreened(monkeypatch):
    """The detector's answers with both probes saying "look" every time."""

    def run(texts: list[str], **span: object) -> list[list[tuple[str, float, str]]]:
        with monkeypatch.context() as patch:
            patch.setattr(repetition, "may_loop", lambda window, max_unit_tokens, counters: True)
            patch.setattr(repetition, "may_repeat", lambda prose: True)
            return [detections(text, **span) for text in texts]

    return run


# Seeds the probe sizes were not chosen on (they were chosen on 0, 7 and 13).
@pytest.mark.parametrize("seed", [31, 57])
def test_the_probes_never_change_a_verdict_on_the_loop_corpora(seed, unscreened):
    texts = [text for corpus in corpora(400, seed).values() for text in corpus]
    assert [detections(text) for text in texts] == unscreened(texts)


def test_the_probes_skip_most_ordinary_answers():
    """What they are for: most answers that repeat nothing are not tokenised at all."""
    texts = corpora(400, 31)["nucleus"]
    skipped = sum(
        not may_loop(text[-2400:], 64) and not repetition.may_repeat(repetition._prose_tail(text, 2400))
        for text in texts
    )
    assert skipped / len(texts) > 0.7


def test_the_probes_never_change_a_verdict_on_the_fixed_texts(unscreened):
    texts = list(NORMAL_TEXTS.values())
    assert [detections(text) for text in texts] == unscreened(texts)
    assert [detections(text, expect_json=True) for text in texts] == unscreened(texts, expect_json=True)


_WORDS = ["the", "log", "a", "I", "retry", "OK", "no", ".", ",", "!!", "step", "x", "42", "7", "é", "--"]
_BLANKS = [" ", " ", " ", "\n", "  ", "\t", ""]


@st.composite
def looping_texts(draw: st.DrawFn) -> str:
    """Prose, then a unit of 1-70 tokens repeated, blanks varying, maybe counting, cut anywhere,
    maybe one more word."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    # Short units and 10-25 copies are where the proof is tightest: weight them.
    unit = [rng.choice(_WORDS) for _ in range(draw(st.integers(1, 3) | st.integers(1, 70)))]
    counter = draw(st.booleans()) and "step" in unit
    copies = draw(st.integers(9, 26) | st.integers(2, 40))
    parts = [" ".join(rng.choice(_WORDS) for _ in range(draw(st.integers(0, 60)))), rng.choice(_BLANKS)]
    for copy in range(copies):
        for word in unit:
            text = f"{word} {copy + 8}" if counter and word == "step" else word
            parts += [text, rng.choice(_BLANKS) if draw(st.booleans()) else " "]
    text = "".join(parts)
    text = text[: len(text) - draw(st.integers(0, 30))]
    # The rule lets the last token differ (a word the limit cut): any word may end the text.
    return text + rng.choice(_BLANKS) + rng.choice(_WORDS) if draw(st.booleans()) else text


@given(looping_texts(), st.booleans())
@settings(max_examples=600, deadline=None)
def test_the_loop_probe_says_look_wherever_the_hard_rule_finds_a_loop(text, expect_json):
    window = text[-detector.tail_chars :]
    tokens = repetition._tokens(window)
    if detector._hard(text, window, tokens, expect_json) is not None:
        counters = not expect_json and repetition._counters_allowed(text, window)
        assert may_loop(window, detector.max_unit_tokens, counters)


@given(st.text(alphabet="ab .!1\n", max_size=300))
@settings(max_examples=600, deadline=None)
def test_the_loop_probe_holds_on_tiny_alphabets(text):
    window = text[-detector.tail_chars :]
    if detector._hard(text, window, repetition._tokens(window), False) is not None:
        assert may_loop(window, detector.max_unit_tokens)

"""One suite over every built-in inline detector: the contract in InlineDetector's docstring."""

from __future__ import annotations

import random

import pytest

from infersight.detectors import BUILTIN_DETECTORS, Detection, InlineDetector, SpanText

_RANDOM_BYTES = random.Random(0).randbytes(64 * 1024)

HOSTILE_TEXTS = {
    "empty": "",
    "whitespace": " \n\t\r\n ",
    "one_mb_letters": "a" * 1_000_000,
    "one_mb_loop": "ab cd, " * 150_000,
    "one_mb_words": " ".join(f"word{i}" for i in range(120_000)),
    "deep_open": "[" * 200_000,
    "deep_closed": "[" * 100_000 + "]" * 100_000,
    "deep_objects": '{"a":' * 50_000,
    "lone_surrogates": "\ud800 start \udfff middle \udbff" * 1000,
    "surrogate_escape": _RANDOM_BYTES.decode("utf-8", "surrogateescape"),
    "latin1_bytes": bytes(range(256)).decode("latin-1") * 256,
    "nul_bytes": "\x00" * 10_000,
    "huge_number": "[" + "9" * 10_000 + "]",
    "quotes_and_backslashes": '"\\' * 50_000,
    "fences": "```" * 10_000,
    "pipes": "|" * 100_000,
    # Shapes that make a careless regex retry from every position (quadratic time).
    "long_word_in_open_array": "[" + "a" * 300_000 + ",b",
    "unclosed_comments": ",/*" * 100_000,
    "unclosed_single_quote": "{'" + "a" * 300_000,
    "spaces_after_brace": "{" + " " * 300_000 + "x",
}


def _variants(text: str) -> list[SpanText]:
    return [
        SpanText(output_text=text),
        SpanText(output_text=text, finish_reason="length"),
        SpanText(output_text=text, finish_reason="content_filter", refusal_field="\ud800"),
        SpanText(output_text=text, expect_json=True),
        SpanText(
            output_text=text,
            expect_json=True,
            finish_reason="stop",
            json_schema={"type": "array", "items": {"type": "integer"}},
        ),
    ]


# Inputs that are not what the type hints promise, as a buggy caller would send them.
ODD_SPANS = [
    SpanText(output_text=None),  # type: ignore[arg-type]
    SpanText(output_text=b"\xff\xfe{bytes}"),  # type: ignore[arg-type]
    SpanText(output_text="{}", finish_reason=None, expect_json=True),  # type: ignore[arg-type]
    SpanText(output_text="[1]", expect_json=True, json_schema={"type": 12}),
    SpanText(output_text="[1]", expect_json=True, json_schema={"$ref": "#"}),
    SpanText(output_text="[1]", expect_json=True, json_schema={1: "no"}),  # type: ignore[dict-item]
    SpanText(output_text="hi", refusal_field=42),  # type: ignore[arg-type]
]

# One input each detector must flag, so the suite cannot pass on detectors that return nothing.
POSITIVES = {
    "repetition": SpanText(output_text="Let me retry the request now. " * 20),
    "json": SpanText(output_text='{"a": 1,}', expect_json=True),
    "refusal": SpanText(output_text="I'm sorry, but I can't help with that."),
    "truncation": SpanText(output_text="The three reasons are", finish_reason="length"),
}

detector_params = pytest.mark.parametrize(
    "detector", BUILTIN_DETECTORS, ids=lambda d: d.name
)


def _check_result(detector: InlineDetector, result: object) -> None:
    assert isinstance(result, list)
    for detection in result:
        assert isinstance(detection, Detection)
        assert detection.detector == detector.name
        assert detection.version == detector.version
        assert detection.label.startswith(f"{detector.name}.")
        assert 0.0 <= detection.score <= 1.0
        assert len(detection.evidence) <= 200
        detection.evidence.encode("utf-8")  # storable: no lone surrogates left


@detector_params
def test_follows_the_protocol(detector):
    assert isinstance(detector, InlineDetector)
    assert isinstance(detector.name, str) and detector.name
    assert isinstance(detector.version, str) and detector.version


def test_names_are_unique():
    names = [d.name for d in BUILTIN_DETECTORS]
    assert len(names) == len(set(names))


@detector_params
@pytest.mark.parametrize("text", list(HOSTILE_TEXTS.values()), ids=list(HOSTILE_TEXTS))
def test_never_raises_on_hostile_text(detector, text):
    for span in _variants(text):
        _check_result(detector, detector.detect(span))


@detector_params
@pytest.mark.parametrize("span", ODD_SPANS, ids=range(len(ODD_SPANS)))
def test_never_raises_on_odd_spans(detector, span):
    _check_result(detector, detector.detect(span))


@detector_params
def test_flags_its_positive_example(detector):
    result = detector.detect(POSITIVES[detector.name])
    _check_result(detector, result)
    assert result, f"{detector.name} found nothing in its positive example"


@detector_params
def test_is_deterministic(detector):
    span = POSITIVES[detector.name]
    assert detector.detect(span) == detector.detect(span)

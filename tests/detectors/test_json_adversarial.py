"""The JSON detector on hostile answers: time and memory linear in the length of the answer.

The detector runs on every LLM span before the collector acknowledges the request, so an answer
built to make it rescan (comments after commas, unterminated ``/*``, escapes in a string that
never ends, 100,000 levels of brackets...) must cost no more per byte than a plain one. The
timing tests compare the cost per KB at 64 KB and 256 KB: linear code costs about the same,
quadratic code four times as much at 256 KB, where it also runs into seconds per request (the
detector before these tests took 14,000 µs per KB on 16 KB of comments after commas, 52,000 on
64 KB).
"""

from __future__ import annotations

import json
import math
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infersight.detectors import JsonDetector, SpanText
from infersight.detectors._json import _parse, _parse_deep

DETECTOR = JsonDetector()
KB = 1024
SMALL = 64 * KB
LARGE = 4 * SMALL
# CPU time. The slowest case takes ~150-400 µs per KB on a loaded 2-core machine; quadratic code
# takes over 10,000 at 256 KB.
MAX_US_PER_KB = 1500
# 4x the text may cost at most 8x the time (2x per KB): linear code with room for noise.
MAX_GROWTH_PER_KB = 2.0
# Below this the per-KB cost is all noise and fixed overhead; no quadratic code is that fast
# on 256 KB.
NOISE_US_PER_KB = 25.0
MAX_BYTES_PER_BYTE = 10.0


def repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head``, ``unit`` repeated, and ``tail``: about ``size`` characters in all."""
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "comments after commas": lambda n: repeat("1, /* c */ ", n, "[", "1]"),
    "comments after commas, no closing bracket": lambda n: repeat("1, /* c */ ", n, "["),
    "unterminated /* after commas": lambda n: repeat("1, /* ", n, "["),
    "a single */ at the end": lambda n: repeat("1, /* x ", n, "[", "*/]"),
    "line comments after commas": lambda n: repeat("1, // c\n", n, "[", "]"),
    "escaped quotes, unterminated string": lambda n: repeat('\\"', n, '{"a": "'),
    "escaped backslashes, unterminated string": lambda n: repeat("\\\\", n, '["'),
    "escaped quotes, single-quoted line": lambda n: repeat("\\'", n, "['"),
    "deep valid arrays": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "deep valid objects": lambda n: '{"a":' * (n // 6) + "1" + "}" * (n // 6),
    "deep unterminated": lambda n: "[" * n,
    "deep unterminated objects": lambda n: repeat('{"a": [', n),
    "deep, mismatched at the end": lambda n: repeat("[1,", n) + "}",
    "huge integer": lambda n: repeat("9", n, "[", "]"),
    "huge float": lambda n: repeat("5", n, "[1.", "e5]"),
    "unterminated string": lambda n: repeat("x", n, '["'),
    "unterminated strings, one per line": lambda n: repeat('"a\n', n, "["),
    "commas": lambda n: repeat(",", n, "[", "]"),
    "commas, unterminated": lambda n: repeat(",", n, "[1"),
    "blanks after a comma": lambda n: repeat(" ", n, "[1,", "x"),
    "blanks after a fence": lambda n: repeat(" \t", n, "{```", "x"),
    "words and commas": lambda n: repeat("a,", n, "["),
    "empty containers, mismatched": lambda n: repeat("[]", n, "[", "}"),
    "unquoted keys": lambda n: repeat("a:{", n, "{"),
    "single quotes": lambda n: repeat("''", n, "["),
    "python literals": lambda n: repeat("True, ", n, "{'a': ["),
}


def detect(text: str) -> list[Any]:
    return DETECTOR.detect(SpanText(output_text=text, expect_json=True))


def us_per_kb(text: str, repeats: int) -> float:
    """The best of ``repeats`` runs of the detector on ``text``, in CPU µs per KB (CPU time:
    on a loaded machine, wall time also counts the time other processes had the CPU)."""
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        detect(text)
        best = min(best, time.process_time() - start)
    return best * 1e6 / (len(text) / KB)


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_time_is_linear(name):
    make = ADVERSARIAL[name]
    small, large = make(SMALL), make(LARGE)
    measured = []
    # A loaded machine can stall one measurement; code that is not linear fails every attempt.
    for _ in range(3):
        per_kb_small = us_per_kb(small, repeats=3)
        assert per_kb_small < MAX_US_PER_KB, f"{name}: {per_kb_small:.0f} µs/KB at 64 KB"
        per_kb_large = us_per_kb(large, repeats=2)
        measured.append((round(per_kb_small), round(per_kb_large)))
        if per_kb_large < MAX_US_PER_KB and (
            per_kb_large < MAX_GROWTH_PER_KB * per_kb_small or per_kb_large < NOISE_US_PER_KB
        ):
            return
    pytest.fail(f"{name}: µs/KB at 64 KB and 256 KB, per attempt: {measured}")


@pytest.mark.parametrize(
    "name",
    [name for name in ADVERSARIAL if not name.startswith("deep valid")],  # those build the value
)
def test_memory_is_linear_with_a_small_constant(name):
    text = ADVERSARIAL[name](SMALL)
    tracemalloc.start()
    try:
        detect(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / len(text) < MAX_BYTES_PER_BYTE, f"{name}: {peak / len(text):.1f} bytes per byte"


def test_the_verdicts_on_hostile_answers():
    # the labels are the usual ones, whatever the size
    def label(name: str) -> str:
        found = detect(ADVERSARIAL[name](SMALL))
        return found[0].evidence.split(":")[0] if found else "ok"

    assert label("comments after commas") == "comments"
    assert label("a single */ at the end") == "trailing_comma, comments"
    assert label("escaped quotes, unterminated string") == "unterminated, closes with '}'"
    assert label("deep valid arrays") == "ok"
    assert label("deep valid objects") == "ok"
    assert label("deep unterminated").startswith("nesting_too_deep")
    assert label("huge float") == "ok"
    assert label("commas") == "trailing_comma"
    assert label("python literals") == "single_quotes, python_literals"


# Pieces of hostile answers; hypothesis looks for a short unit that repeated costs too much.
TRICKY = [
    "[", "]", "{", "}", ",", ", ", ":", " ", "\n", '"', "'", "\\", '\\"', "\\'", "/", "*", "/*",
    "*/", "//", "#", "a", "1", "NaN", "True", "```", "a:", "e5", "-",
]  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=6), st.sampled_from(["", "[", "{", '{"a": "']))
def test_no_repeated_unit_makes_it_superlinear(unit, head):
    text = repeat("".join(unit), 16 * KB, head)
    # 16 KB of quadratic work costs seconds; linear work well under a millisecond per KB
    assert us_per_kb(text, repeats=3) < 2 * MAX_US_PER_KB


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(10**20), 10**20)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
    )
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
        max_leaves=max_leaves,
    )


@settings(max_examples=60, deadline=None)
@given(json_values(), st.integers(0, 3_000), st.sampled_from([None, 1]))
def test_valid_json_is_valid_at_any_depth(value, depth, indent):
    text = "[" * depth + json.dumps(value, indent=indent) + "]" * depth
    assert detect(text) == []
    parsed = _parse(text, keep_value=True)
    assert parsed.ok
    inner = parsed.value
    for _ in range(depth):  # peeled by hand: == on nested lists recurses
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner == value


MUTATIONS = ["[", "]", "{", "}", ",", ":", '"', "\\", " ", "1", "NaN", "Infinity", '"a": 1', "]]", "[["]


@settings(max_examples=200, deadline=None)
@given(json_values(max_leaves=20), st.data())
def test_slices_parse_like_json_loads(value, data):
    # The sliced parser for deep JSON, with slices of 1 to 3 levels so that short texts are
    # sliced too: valid exactly when json.loads (with the strict hooks) says so, same value.
    text = json.dumps(value, indent=data.draw(st.sampled_from([None, 1])))
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["insert", "delete", "cut"]))
        if edit == "insert":
            text = text[:at] + data.draw(st.sampled_from(MUTATIONS)) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at]
    expected = _parse(text, keep_value=True)
    # Without a value wanted, orjson may answer first: the same verdict.
    assert _parse(text).ok == expected.ok
    for step in (1, 2, 3):
        sliced = _parse_deep(text, step)
        assert sliced.ok == expected.ok, (text, step, sliced, expected)
        if expected.ok:
            assert sliced.value == expected.value


@settings(max_examples=100, deadline=None)
@given(json_values(max_leaves=20).filter(lambda v: isinstance(v, (list, dict)) and v), st.data())
def test_a_cut_container_is_never_ok(value, data):
    text = json.dumps(value)
    cut = text[: data.draw(st.integers(1, len(text) - 1))]
    found = detect(cut)
    assert len(found) == 1
    assert found[0].label in {"json.truncated", "json.malformed"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*TRICKY, '"a"', "'a'", "null", "tru", "{a", "Infinity"]), max_size=30))
def test_any_answer_gets_at_most_one_known_label(pieces):
    found = detect("".join(pieces))
    assert len(found) <= 1
    labels = {"json.truncated", "json.malformed", "json.wrapped", "json.schema_invalid"}
    assert all(d.label in labels for d in found)

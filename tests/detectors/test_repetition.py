from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight.detectors import RepetitionDetector, SpanText
from infersight.detectors import _repetition as repetition
from infersight.detectors._repetition import _TOKEN, _tokens

from .loop_corpus import prose
from .texts import NORMAL_TEXTS, PROSE

detector = RepetitionDetector()

LEAD = "To fix the flaky deployment, we first need to understand why the health check fails.\n\n"
UNIT = "Let me check the logs again to see what happened. "


def labels(text: str, **span: object) -> list[str]:
    return [d.label for d in detector.detect(SpanText(output_text=text, **span))]


def test_catches_a_looping_tail():
    [found] = detector.detect(SpanText(output_text=LEAD + UNIT * 12))
    assert found.label == "repetition.loop"
    assert found.score == 1.0
    assert found.evidence == UNIT.strip()


def test_catches_a_loop_with_an_incrementing_counter():
    text = LEAD + "".join(f"Step {i}: retry the request and wait. " for i in range(18, 40))
    [found] = detector.detect(SpanText(output_text=text))
    assert found.label == "repetition.loop"
    assert found.evidence == "Step 39: retry the request and wait."


def test_catches_a_loop_whose_last_copy_is_cut_off():
    for cut in (7, 20, 33):  # mid-word, mid-sentence, ...
        text = LEAD + UNIT * 6 + UNIT[:cut]
        assert labels(text) == ["repetition.loop"], UNIT[:cut]


def test_catches_a_loop_of_identical_bullets_at_the_end():
    text = "Checklist:\n" + "- Make sure the cache is warm before measuring latency.\n" * 10
    assert labels(text) == ["repetition.loop"]


def test_catches_a_chinese_loop():
    text = "我们来分析这个问题。" + "我需要再检查一下配置文件。" * 8
    assert labels(text) == ["repetition.loop"]


def test_a_long_passage_said_twice_is_suspect_and_three_times_a_loop():
    # 2 copies of a 31-token unit: the second one ends the answer, a passage said twice.
    long_unit = (
        "The deployment failed because the health check timed out after thirty seconds, "
        "so the orchestrator restarted the container. "
    )
    [found] = detector.detect(SpanText(output_text=LEAD + long_unit * 2))
    assert found.label == "repetition.suspect"
    assert found.score >= 0.995
    assert labels(LEAD + long_unit * 3) == ["repetition.loop"]


def test_a_short_unit_repeated_many_times_is_a_loop_under_48_tokens():
    for word, sep in (("Diarrhea", "\n"), ("Advertisement", "\n\n"), ("Read more", " ")):
        [found] = detector.detect(SpanText(output_text=LEAD + sep.join([word] * 12)))
        assert (found.label, found.evidence) == ("repetition.loop", word)


def test_nine_copies_of_a_short_unit_are_not_a_loop():
    assert labels("Ha! " * 9) == []


def test_a_short_repetition_is_not_a_loop():
    # Three copies but only 30 tokens: below the 48-token floor.
    assert labels(LEAD + "Yes, that works. Yes, that works. Yes, that works.") == []


def test_numbers_that_do_not_count_are_data_not_a_loop():
    rng = random.Random(7)
    text = "Readings from the sensor:\n" + "".join(
        f"- Sample {rng.randint(0, 999)}: value {rng.randint(0, 999)} units.\n" for _ in range(20)
    )
    assert labels(text) == []


def test_soft_rule_catches_a_drifting_loop():
    rng = random.Random(3)
    variants = [
        "I hope this helps! Let me know if you have any other questions.",
        "I hope this is helpful! Let me know if you have other questions.",
        "Hope this helps! Let me know if you have any more questions.",
        "I hope that helps! Let me know if there are any other questions.",
    ]
    text = LEAD + " ".join(rng.choice(variants) for _ in range(20))
    [found] = detector.detect(SpanText(output_text=text))
    assert found.label == "repetition.suspect"
    assert 0.5 < found.score <= 1.0
    assert "Let me know if" in found.evidence


def test_soft_rule_catches_repeated_bullets_followed_by_prose():
    text = (
        "Things to check:\n"
        + "- Make sure the cache is warm before you measure latency.\n- Restart the worker.\n" * 8
        + "\nThat should cover it, good luck with the migration and the rollout next week!"
    )
    assert labels(text) == ["repetition.suspect"]


@pytest.mark.parametrize("name", list(NORMAL_TEXTS))
def test_stays_quiet_on_normal_text(name):
    assert labels(NORMAL_TEXTS[name]) == []


def test_stays_quiet_on_a_code_block_with_repeated_lines_when_cut_off_after_it():
    # The same code block, repeated lines included, ending the answer with a closing remark.
    code = "```python\n" + 'print("hello")\n' * 30 + "```\n"
    assert labels(PROSE + code + "Run it and you will see thirty greetings.") == []


def test_soft_rule_ignores_code_tables_and_json():
    code = "```\n" + "retry(request, backoff=2.0)  # again\n" * 40 + "```\n"
    table = "| name | value |\n|---|---|\n" + "| retry | again and again |\n" * 40
    json_lines = '{\n' + '  "status": "retry again later",\n' * 40 + "}\n"
    for block in (code, table, json_lines):
        assert labels(block + "That is all.") == [], block[:20]


def test_json_output_is_left_to_the_hard_rule():
    text = '{"items": [' + ", ".join('{"status": "retry again later", "ok": false}' for _ in range(3))
    assert labels(text + "]}", expect_json=True) == []


def test_reads_only_the_tail_of_a_huge_answer():
    # A loop early in a long answer is not at the end, so it is not the answer's failure mode.
    assert labels(UNIT * 50 + prose(random.Random(4), 400)) == []


def test_rejects_bad_parameters_with_a_clear_message():
    with pytest.raises(ValueError, match="'max_unit_tokens' parameter of RepetitionDetector"):
        RepetitionDetector(max_unit_tokens=0)
    with pytest.raises(ValueError, match="'false_alarm_rate'"):
        RepetitionDetector(false_alarm_rate=0)


# The fast tokeniser must see exactly the tokens of the reference regex, or the loop rules
# would judge a different text: prose, JSON-like punctuation runs (its bail-out), CJK, digits,
# underscores, odd numerics and non-breaking spaces.
_ALPHABET = "abc XYZ_é1²٣.,!?-'\"\n\t  ()[]{}:日本語한국어ひらがなカタカナ😀\u00a0\u2003ⅫÆß"


@given(st.text(alphabet=_ALPHABET, max_size=400))
@settings(max_examples=400, deadline=None)
def test_fast_tokeniser_matches_the_reference_regex(text):
    assert _tokens(text) == _TOKEN.findall(text)


def test_fast_tokeniser_on_json_takes_the_one_pass_path():
    record = '{"id": 17, "name": "Ada", "tags": ["x", "y"], "ok": true}, '
    text = "[" + record * 40 + "]"
    assert _tokens(text) == _TOKEN.findall(text)


# The prose tail's shortcut (every line kept) must give what the line-by-line pass gives:
# fences, pipes, JSON members, bullets and numbered items, anywhere on a line, after any blank.
_LINE_PARTS = ["ab", " ", "\n", "\t", "\r\n", "\u2028", "\x1c", "- ", "* ", "• ", "12. ", "3)", "٣. ", '"k": ',
               '"a"', "{", "]", "|", "`", "```", "~~~", "~", "x.", "\n\n"]


@given(st.lists(st.sampled_from(_LINE_PARTS), max_size=40))
@settings(max_examples=600, deadline=None)
def test_the_prose_tail_shortcut_keeps_what_the_line_pass_keeps(parts):
    text = "".join(parts)
    for limit in (2400, 7):
        fast = repetition._prose_tail(text, limit)
        real = repetition._all_prose
        repetition._all_prose = lambda _text: False
        try:
            assert fast == repetition._prose_tail(text, limit)
        finally:
            repetition._all_prose = real

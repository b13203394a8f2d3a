from __future__ import annotations

import socket

import pytest

from infersight.detectors import JsonDetector, SpanText

detector = JsonDetector()

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def classify(text: str, finish_reason: str = "", schema: dict | None = None) -> tuple[str, str]:
    """(label, evidence) of the one detection, or ("ok", "") when there is none."""
    found = detector.detect(
        SpanText(output_text=text, finish_reason=finish_reason, expect_json=True, json_schema=schema)
    )
    assert len(found) <= 1
    return (found[0].label, found[0].evidence) if found else ("ok", "")


def test_does_nothing_when_json_is_not_expected():
    assert detector.detect(SpanText(output_text="{'broken': ")) == []


@pytest.mark.parametrize(
    "text",
    ['{"name": "Ann", "age": 3}', '  {"name": "Ann", "age": 3, "extra": [1, 2.5, null]}\n'],
)
def test_valid_json_that_fits_the_schema_is_ok(text):
    assert classify(text, schema=SCHEMA) == ("ok", "")


def test_valid_json_without_schema_is_ok():
    assert classify('[{"a": "x\\ny"}, 1e3, true, "// not a comment"]') == ("ok", "")


def test_complete_json_at_the_token_limit_is_ok():
    assert classify('{"name": "Ann", "age": 3}', finish_reason="length") == ("ok", "")


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ('{"name": "Ann", "age": "three"}', "$.age: 'three' is not of type 'integer'"),
        ('{"name": "Ann"}', "$: 'age' is a required property"),
    ],
)
def test_schema_invalid(text, evidence):
    assert classify(text, schema=SCHEMA) == ("json.schema_invalid", evidence)


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS"])
def test_truncated_by_finish_reason(reason):
    label, evidence = classify('{"name": "Ann", "tags": ["a", "b', finish_reason=reason)
    assert label == "json.truncated"
    assert f"finish_reason={reason.lower()}" in evidence


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Ann", "tags": ["a", "b"',  # open array and object
        '{"name": "An',  # inside a string value
        '{"name": "Ann", "ag',  # inside a key
        '{"name": "Ann", "age":',  # after a colon
        '{"ok": tru',  # inside a literal
        "[1, 2,",  # after a comma
        '{"path": "C:\\\\',  # inside an escape sequence
        '```json\n{"a": [1, 2',  # inside an unclosed fence
        'Here you go: {"a": {"b": 1}',  # after prose
    ],
)
def test_truncated_when_closing_would_make_it_parse(text):
    label, evidence = classify(text)
    assert label == "json.truncated"
    assert evidence.startswith("unterminated, closes with")


def test_a_mismatched_bracket_is_malformed_not_truncated():
    assert classify('{"a": [1, 2}')[0] == "json.malformed"


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ('```json\n{"a": 1}\n```', "markdown fence: "),
        ('Here it is:\n```\n{"a": 1}\n```\nAnything else?', "markdown fence and prose: "),
        ('Sure! Here is the JSON: {"a": 1} Let me know.', "prose around JSON: "),
        ('{"a": 1}\n\nHope this helps!', "prose around JSON: "),
    ],
)
def test_wrapped(text, evidence):
    label, found = classify(text)
    assert label == "json.wrapped"
    assert found.startswith(evidence)


@pytest.mark.parametrize(
    ("text", "subtype"),
    [
        ('{"a": 1, "b": [1, 2,],}', "trailing_comma"),
        ("{'a': 1, 'b': 'x'}", "single_quotes"),
        ('{\n  // the id\n  "a": 1\n}', "comments"),
        ('{"a": 1 /* one */}', "comments"),
        ('{"a": NaN}', "nan_infinity"),
        ('{"a": -Infinity}', "nan_infinity"),
        ('{"a": True, "b": None}', "python_literals"),
        ('{a: 1, b: 2}', "unquoted_keys"),
        ("[" * 100_000, "nesting_too_deep"),
        ("", "empty"),
        ("I could not produce JSON for that request.", "no_json"),
        ('{"a" 1}', "syntax"),
    ],
)
def test_malformed_names_the_subtype(text, subtype):
    label, evidence = classify(text)
    assert label == "json.malformed"
    assert evidence.split(":")[0].split(" ")[0] == subtype


@pytest.mark.parametrize("depth", [990, 5_000, 100_000])
def test_valid_json_is_valid_at_any_depth(depth):
    # deeper than json.loads can recurse: parsed in slices, and the schema checked as usual
    text = '{"b": "x", "a": ' + '{"a": ' * depth + "[1]" + "}" * depth + "}"
    assert classify(text) == ("ok", "")
    assert classify(text, schema={"type": "object", "required": ["a", "b"]}) == ("ok", "")
    schema = {"properties": {"b": {"type": "integer"}}}
    assert classify(text, schema=schema) == ("json.schema_invalid", "$.b: 'x' is not of type 'integer'")
    assert classify(f"```json\n{text}\n```")[0] == "json.wrapped"


def test_problems_deep_inside_are_still_found():
    deep = "[" * 3_000
    assert classify(deep + '{"a": 1, "a": 2}' + "]" * 3_000) == ("json.duplicate_keys", "key 'a' repeated")
    assert classify(deep + "NaN" + "]" * 3_000)[1].startswith("nan_infinity")
    label, evidence = classify(deep + "1 2" + "]" * 3_000)
    assert label == "json.malformed"
    assert evidence == "syntax: Expecting ',' delimiter: line 1 column 3003 (char 3002)"


def test_nesting_too_deep_is_only_a_runaway_that_ends_open():
    # more than 512 brackets still open at the end: not an answer cut short
    assert classify("[" * 600)[1].startswith("nesting_too_deep: ends inside 600 open brackets")
    # a cut answer with a deep (valid) part inside is truncated like any other
    label, evidence = classify('{"a": ' + "[" * 2_000 + "]" * 2_000 + ', "b": [1, 2')
    assert label == "json.truncated"
    assert evidence.startswith("unterminated, closes with ']}'")
    # the provider cut it: truncated, whatever the depth
    assert classify("[" * 600, finish_reason="length")[0] == "json.truncated"


def test_problems_inside_strings_are_not_subtypes():
    label, evidence = classify('{"url": "http://x.io//a", "quote": "it\'s", "a": 1,}')
    assert label == "json.malformed"
    assert evidence.startswith("trailing_comma:")


def test_a_bracket_inside_a_line_comment_closes_nothing():
    label, evidence = classify('{"a": 1, // the end }')
    assert label == "json.malformed"
    assert evidence.startswith("comments:")


def test_several_subtypes_are_all_named():
    label, evidence = classify("{'a': 1, // note\n}")
    assert label == "json.malformed"
    assert evidence.startswith("single_quotes, trailing_comma, comments:")


def test_duplicate_keys_are_their_own_label_never_malformed():
    assert classify('{"a": 1, "b": {"c": 2, "c": 3}}') == ("json.duplicate_keys", "key 'c' repeated")
    # valid but for the repeated key: the schema reads the value Python keeps (the last)
    schema = {"properties": {"c": {"type": "string"}}}
    assert classify('{"c": "x", "c": 3}', schema=schema) == (
        "json.schema_invalid", "$.c: 3 is not of type 'string'"
    )
    assert classify('{"c": 3, "c": "x"}', schema=schema) == ("json.duplicate_keys", "key 'c' repeated")
    # wrapped or cut short, the wrapping or the cut is the failure to name
    assert classify('```json\n{"a": 1, "a": 2}\n```')[0] == "json.wrapped"
    assert classify('{"a": 1, "a": 2, "b": [1, 2')[0] == "json.truncated"
    # with another problem, that problem is named
    assert classify('{"a": 1, "a": NaN}')[0] == "json.malformed"


def test_empty_output_at_the_token_limit_is_truncated():
    assert classify("", finish_reason="length")[0] == "json.truncated"


def test_unusable_schemas_are_skipped():
    assert classify('{"a": 1}', schema={"type": 12}) == ("ok", "")
    assert classify('{"a": 1}', schema={"$ref": "#"}) == ("ok", "")


def test_remote_refs_are_never_fetched(monkeypatch):
    attempts = []

    def no_network(*args, **kwargs):
        attempts.append(args)
        raise OSError("no network in tests")

    monkeypatch.setattr(socket, "create_connection", no_network)
    schema = {"$ref": "https://schemas.example.invalid/person.json"}
    assert classify('{"a": 1}', schema=schema) == ("ok", "")
    assert attempts == []


@pytest.mark.parametrize("text", [
    "[" * 600, '{"a": ' * 600, 'Here it is: ' + "[1, " * 600, '["[[[", ' + "[" * 600, '{"a": "\\"[", "b": ' * 600,
])
def test_a_runaway_is_named_as_the_full_path_names_it(text):
    from infersight.detectors._json import _diagnose, _runaway

    text = text.strip()  # as the detector reads it
    body = text[min(i for i in (text.find("["), text.find("{")) if i >= 0):]
    assert _runaway(text) is not None
    assert classify(text) == ("json.malformed", _diagnose(body)[1])
    assert classify(text, finish_reason="length")[0] == "json.truncated"


def test_brackets_inside_strings_are_no_runaway():
    assert classify('"' + "[" * 600 + '"') == ("ok", "")
    assert classify('["' + "{" * 600 + '"')[0] == "json.truncated"


def test_deep_unterminated_input_costs_about_what_parsing_as_much_json_does():
    # Measured against json.loads on as much flat JSON in the same test, so the verdict does
    # not depend on the machine's speed; the per-bracket scans cost ~30 times that.
    import json
    import time

    size = 256 * 1024
    runaway = '{"a": ' * (size // 6)
    flat = json.dumps(["ab"] * (size // 6))

    def best(fn) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    baseline = best(lambda: json.loads(flat))
    assert best(lambda: classify(runaway)) < 10 * baseline

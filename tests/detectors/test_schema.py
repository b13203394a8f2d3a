"""JSON Schema patterns run on RE2, never on Python's backtracking ``re``."""

from __future__ import annotations

import json

import pytest

from infersight.detectors import JsonDetector, SpanText, schema_check

# The span that stopped every project's storage: 2^40 steps on a backtracking engine.
POISON_SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
POISON_OUTPUT = json.dumps({"a": "a" * 40 + "!"})


def _labels(output: str, schema: dict) -> list[tuple[str, str]]:
    found = JsonDetector().detect(SpanText(output_text=output, expect_json=True, json_schema=schema))
    return [(d.label, d.evidence) for d in found]


@pytest.fixture
def no_python_re(monkeypatch):
    """jsonschema's own modules lose ``re``: any user pattern reaching it fails the test."""
    import jsonschema._keywords
    import jsonschema._utils

    class Forbidden:
        def __getattr__(self, name: str):
            raise AssertionError(f"a schema pattern reached Python's re.{name}")

    monkeypatch.setattr(jsonschema._keywords, "re", Forbidden())
    monkeypatch.setattr(jsonschema._utils, "re", Forbidden())


def test_the_backtracking_pattern_is_checked_in_linear_time(no_python_re):
    assert _labels(POISON_OUTPUT, POISON_SCHEMA) == [
        ("json.schema_invalid", f"$.a: {'a' * 40 + '!'!r} does not match '^(a+)+$'")
    ]
    assert _labels(json.dumps({"a": "a" * 40}), POISON_SCHEMA) == []


def test_pattern_properties_and_additional_properties_use_re2(no_python_re):
    schema = {"type": "object", "properties": {"id": {"type": "integer"}},
              "patternProperties": {"^(x+)+$": {"type": "integer"}}, "additionalProperties": False}
    assert _labels(json.dumps({"id": 1, "xxx": 2}), schema) == []
    assert _labels(json.dumps({"xxx": "two"}), schema) == [
        ("json.schema_invalid", "$.xxx: 'two' is not of type 'integer'")
    ]
    label, evidence = _labels(json.dumps({"x" * 40 + "!": 1}), schema)[0]
    assert label == "json.schema_invalid" and "Additional properties are not allowed" in evidence


def test_property_names_pattern_uses_re2(no_python_re):
    schema = {"type": "object", "propertyNames": {"pattern": "^(a+)+$"}}
    assert _labels(json.dumps({"aaa": 1}), schema) == []
    assert _labels(json.dumps({"a" * 40 + "!": 1}), schema)[0][0] == "json.schema_invalid"


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": r"^(a)\1$"},  # backreference
    {"type": "string", "pattern": r"^(?=a)a+$"},  # lookahead
    {"type": "object", "patternProperties": {r"(?<!x)y": {}}},  # lookbehind
    {"$defs": {"s": {"pattern": r"(a)\1"}}, "$ref": "#/$defs/s"},  # anywhere in the schema
    {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False},
], ids=["backreference", "lookahead", "lookbehind", "nested", "unevaluated"])
def test_a_pattern_re2_cannot_run_refuses_the_schema(schema, no_python_re):
    check = schema_check(schema)
    assert check.validator is None and check.refusal == "schema_pattern", check
    assert _labels(json.dumps("aa"), schema) == []  # not checked, whatever the output


def test_data_that_looks_like_a_pattern_is_not_one():
    schema = {"const": {"pattern": r"(a)\1"}, "examples": [{"pattern": "(?=x)"}]}
    assert schema_check(schema).refusal is None
    assert _labels(json.dumps({"pattern": r"(a)\1"}), schema) == []


def test_an_invalid_schema_is_refused_as_unusable():
    assert schema_check({"type": "nope"}).refusal == "schema_unusable"
    assert schema_check({"type": "string", "pattern": "("}).refusal == "schema_pattern"


def test_format_regex_is_an_annotation_and_never_compiled(no_python_re, monkeypatch):
    import jsonschema._format

    monkeypatch.setattr(jsonschema._format, "re", None)  # format checkers would need it
    schema = {"type": "object", "properties": {"p": {"type": "string", "format": "regex"}}}
    assert schema_check(schema).refusal is None
    assert _labels(json.dumps({"p": "(a+)+$"}), schema) == []

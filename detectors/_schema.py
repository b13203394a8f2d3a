"""JSON Schema checks whose regular expressions run in time linear in the text.

A span's schema is written by whoever sends the span, and ``pattern`` and ``patternProperties``
are regular expressions. jsonschema runs them on Python's ``re``, which backtracks:
``^(a+)+$`` against forty ``a`` and a ``!`` tries every split of the ``a`` (2^40 steps), and the
detector never returns. The validator made here runs every schema pattern on RE2 (the
``google-re2`` package), which matches in linear time, and a schema with a pattern RE2 cannot
compile (backreferences, lookaround) is refused whole, never run on ``re``:

1. ``pattern``, ``patternProperties`` and ``additionalProperties`` (which matches the keys of
   ``patternProperties``) are RE2 implementations of jsonschema's keywords.
2. ``unevaluatedProperties`` beside ``patternProperties`` is refused: jsonschema evaluates it
   through a private helper that calls ``re`` on those patterns.
3. The schema's own check against its metaschema runs without a format checker, whose
   ``format: regex`` would compile each pattern on ``re``. ``format`` in the schema is an
   annotation here (no format checker), so it runs no pattern either.

RE2's ``\\d`` and ``\\w`` are ASCII, as in ECMA-262 (the dialect JSON Schema names) without
the ``u`` flag; Python's ``re`` makes them Unicode.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Data keywords hold instances, not schemas: a "pattern" key in them is no pattern.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})

SCHEMA_PATTERN = "schema_pattern"
SCHEMA_UNUSABLE = "schema_unusable"


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """A compiled schema: ``validator`` when it can be checked, else why not (``refusal``, one
    of :data:`SCHEMA_PATTERN` and :data:`SCHEMA_UNUSABLE`, and ``detail``)."""

    validator: Any = None
    refusal: str | None = None
    detail: str = ""


def schema_check(schema: dict[str, Any]) -> SchemaCheck:
    """The validator for ``schema``, or why it is refused. Cached for the 64 latest schemas."""
    try:
        key = json.dumps(schema, sort_keys=True)
    except Exception:  # noqa: BLE001 - an unserialisable schema cannot be checked
        return SchemaCheck(refusal=SCHEMA_UNUSABLE, detail="not serialisable as JSON")
    return _compiled(key)


@functools.lru_cache(maxsize=64)
def _compiled(schema_key: str) -> SchemaCheck:
    try:
        import re2  # noqa: F401 - without RE2 no schema pattern is ever run
        import referencing
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for
    except ImportError as exc:
        return SchemaCheck(refusal=SCHEMA_UNUSABLE, detail=f"missing package: {exc.name}")
    schema = json.loads(schema_key)
    problem = _unrunnable_pattern(schema)
    if problem is not None:
        return SchemaCheck(refusal=SCHEMA_PATTERN, detail=problem)
    try:
        cls = _linear(validator_for(schema, default=Draft202012Validator))
        cls.check_schema(schema, format_checker=None)
        # An explicit empty registry: jsonschema's default one fetches remote $refs over HTTP,
        # and a detector must never block on the network.
        return SchemaCheck(validator=cls(schema, registry=referencing.Registry()))
    except Exception as exc:  # noqa: BLE001 - a schema jsonschema refuses is not checked
        return SchemaCheck(refusal=SCHEMA_UNUSABLE, detail=str(exc).split("\n", 1)[0][:200])


def _unrunnable_pattern(schema: Any) -> str | None:
    """Why one of the schema's patterns cannot be run on RE2, or None."""
    import re2

    has_pattern_properties = has_unevaluated = False
    for pattern, where in _patterns(schema):
        if where == "patternProperties":
            has_pattern_properties = True
        elif where == "unevaluatedProperties":
            has_unevaluated = True
            continue
        try:
            _re2(pattern)
        except re2.error as exc:
            reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
            return f"{where} {pattern[:80]!r} cannot run on RE2: {reason}"
    if has_pattern_properties and has_unevaluated:
        return "unevaluatedProperties beside patternProperties is not checked (jsonschema runs them on re)"
    return None


def _patterns(schema: Any) -> Iterator[tuple[str, str]]:
    """Each pattern of ``schema`` with the keyword holding it, and ("", "unevaluatedProperties")
    for each use of that keyword. Iterative: a schema may nest as deep as JSON parses."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for keyword, value in node.items():
            if keyword in _DATA_KEYWORDS:
                continue
            if keyword == "pattern" and isinstance(value, str):
                yield value, "pattern"
            elif keyword == "patternProperties" and isinstance(value, dict):
                yield from ((key, "patternProperties") for key in value)
            elif keyword == "unevaluatedProperties":
                yield "", "unevaluatedProperties"
            stack.append(value)


@functools.lru_cache(maxsize=1024)
def _re2(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is counted, not printed to stderr
    return re2.compile(pattern, options)


def _search(pattern: str, text: str) -> bool:
    return _re2(pattern).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        key for key in instance
        if key not in declared and not any(_search(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        names = ", ".join(repr(key) for key in sorted(extras, key=str))
        yield ValidationError(f"Additional properties are not allowed ({names} unexpected)")


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _linear(cls: Any) -> Any:
    """``cls`` with every pattern keyword it has run on RE2."""
    from jsonschema.validators import extend

    return extend(cls, {keyword: fn for keyword, fn in _KEYWORDS.items() if keyword in cls.VALIDATORS})

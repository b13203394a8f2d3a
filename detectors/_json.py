"""Broken JSON: the application asked for JSON and did not get it.

One class per span, checked in this order:

* ``ok`` (no detection): strict JSON that satisfies the schema, if one was given.
* ``json.schema_invalid``: strict JSON that fails the schema (needs the ``jsonschema`` package,
  part of the collector extra; without it the schema is not checked).
* ``json.wrapped``: valid JSON inside a markdown fence or surrounded by prose (the schema is
  not checked then: the wrapping is the failure to fix first).
* ``json.truncated``: the provider stopped at the token limit, or the text is an unterminated
  structure that would parse once closed.
* ``json.malformed``: anything else; the evidence starts with the subtypes found:
  ``trailing_comma``, ``single_quotes``, ``comments``, ``nan_infinity``, ``duplicate_keys``,
  ``python_literals``, ``unquoted_keys``, ``nesting_too_deep``, ``empty``, ``no_json``, or
  ``syntax``.

"Strict" means RFC 8259: Python's ``json`` accepts NaN, Infinity and duplicate keys, which most
other parsers reject, so the hooks below refuse them.
"""

from __future__ import annotations

import functools
import json
import re
import string
from dataclasses import dataclass
from typing import Any

from ._base import (
    LENGTH_FINISH_REASONS,
    Detection,
    SpanText,
    finish_reason_of,
    output_text_of,
)

_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\r?\n(.*?)(?:```|\Z)", re.S)

# Double-quoted strings come first so nothing inside a string is mistaken for a problem. Every
# branch starts with a character class, which lets the regex engine skip plain text quickly;
# bare words are matched whole and sorted out in Python.
_SCAN = re.compile(
    r"""
      "[^"\\]*(?:\\.[^"\\]*)*"?
    | (?P<single_quotes>'[^'\\\n]*(?:\\.[^'\\\n]*)*')
    | (?P<comments>//[^\n]*|/\*.*?(?:\*/|\Z)|\#[^\n]*)
    | (?P<trailing_comma>,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[}\]]))
    | (?P<unquoted_keys>[{,]\s*[A-Za-z_$][\w$]*\s*:)
    | (?P<word>[A-Za-z_$][\w$]*)
    """,
    re.S | re.X,
)
_WORD_SUBTYPES = {
    "NaN": "nan_infinity",
    "Infinity": "nan_infinity",
    "True": "python_literals",
    "False": "python_literals",
    "None": "python_literals",
}
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*("?)|[\[\]{}]')
# What a number or literal cut in half ends with. str.rstrip with a set of characters is
# linear; a regex anchored at the end would retry from every position of a long word.
_SCALAR_CHARS = string.ascii_letters + string.digits + ".+-"
_CLOSER = {"[": "]", "{": "}"}

# Closing an unterminated structure deeper than this cannot parse anyway.
_MAX_CLOSE_DEPTH = 512
_EXCERPT_CHARS = 60


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _NonStandardConstant(Exception):
    def __init__(self, constant: str) -> None:
        self.constant = constant


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _reject_constant(constant: str) -> Any:
    raise _NonStandardConstant(constant)


@dataclass(frozen=True)
class _Parsed:
    ok: bool
    value: Any = None
    problem: str = ""  # a malformed subtype when not ok
    detail: str = ""


# Problems that stay problems whatever surrounds the JSON or wherever it stops.
_DEFINITE = frozenset({"duplicate_keys", "nan_infinity", "nesting_too_deep"})


def _parse(text: str) -> _Parsed:
    try:
        value = json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_reject_duplicates
        )
    except _DuplicateKey as exc:
        return _Parsed(False, problem="duplicate_keys", detail=f"key {exc.key!r} repeated")
    except _NonStandardConstant as exc:
        return _Parsed(False, problem="nan_infinity", detail=f"bare {exc.constant}")
    except RecursionError:
        return _Parsed(False, problem="nesting_too_deep", detail="deeper than the parser allows")
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, huge integers
        return _Parsed(False, problem="syntax", detail=str(exc))
    return _Parsed(True, value=value)


class JsonDetector:
    """Classify the answer of a span that was expected to be JSON.

    Does nothing unless ``span.expect_json``. Schema validators are compiled once per distinct
    schema and cached (bounded); remote ``$ref`` is never fetched. Pure CPU, safe to share
    between threads, never raises from ``detect``.
    """

    name = "json"
    version = "1.0"

    def detect(self, span: SpanText) -> list[Detection]:
        """Return one ``json.*`` detection, or nothing when JSON was not expected or is ok."""
        if not span.expect_json:
            return []
        verdict = _classify(output_text_of(span), finish_reason_of(span), span.json_schema)
        if verdict is None:
            return []
        kind, evidence = verdict
        return [Detection(self.name, self.version, f"json.{kind}", 1.0, evidence)]


def _classify(raw: str, finish_reason: str, schema: Any) -> tuple[str, str] | None:
    text = raw.strip()
    cut = finish_reason in LENGTH_FINISH_REASONS
    if not text:
        if cut:
            return "truncated", f"empty output, finish_reason={finish_reason}"
        return "malformed", "empty: no JSON in the output"

    whole = _parse(text)
    if whole.ok:
        problem = _schema_problem(whole.value, schema)
        return None if problem is None else ("schema_invalid", problem)
    if whole.problem in _DEFINITE:
        return "malformed", f"{whole.problem}: {whole.detail}"

    body = text
    unwrapped = _unwrap(text)
    if unwrapped is not None:
        body, wrapper, inner = unwrapped
        if inner.ok:
            return "wrapped", f"{wrapper}: {_head(body)}"
        if inner.problem in _DEFINITE:
            return "malformed", f"{inner.problem} ({wrapper}): {inner.detail}"

    if cut:
        return "truncated", f"finish_reason={finish_reason}: …{_tail(body)}"
    closers = _closes_to_valid(body)
    if closers is not None:
        return "truncated", f"unterminated, closes with {closers!r}: …{_tail(body)}"

    if "{" not in body and "[" not in body:
        return "malformed", f"no_json: {_head(body)}"
    found = _malformed_features(body)
    if not found:
        return "malformed", f"syntax: {_parse(body).detail}"
    subtypes = ", ".join(subtype for subtype, _ in found)
    return "malformed", f"{subtypes}: {found[0][1]}"


def _unwrap(text: str) -> tuple[str, str, _Parsed] | None:
    """The JSON candidate inside a fence or prose, what wrapped it, and how it parses."""
    fence = _FENCE.search(text)
    if fence is not None:
        body = fence.group(1).strip()
        outside = (text[: fence.start()] + text[fence.end() :]).strip()
        wrapper = "markdown fence and prose" if outside else "markdown fence"
        return body, wrapper, _parse(body)

    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    end = max(text.rfind("}"), text.rfind("]"))
    body = text[start : end + 1] if end > start else text[start:]
    if body == text:
        return None  # nothing around it: not wrapped, just broken
    parsed = _parse(body)
    if not parsed.ok and start == 0:
        # With no prose in front, the "prose" after the last bracket may be the rest of the
        # broken JSON itself: diagnose the whole text instead.
        return None
    return body, "prose around JSON", parsed


def _closes_to_valid(body: str) -> str | None:
    """The closing brackets that make an unterminated ``body`` parse, or None."""
    stack: list[str] = []
    in_string = False
    for match in _STRUCTURE.finditer(body):
        token = match.group()
        if token[0] == '"':
            in_string = not match.group(1)
        elif token in _CLOSER:
            stack.append(_CLOSER[token])
            if len(stack) > _MAX_CLOSE_DEPTH:
                return None
        elif not stack or stack.pop() != token:
            return None  # a mismatched bracket is broken, not cut short
    if not stack:
        return None
    closers = "".join(reversed(stack))

    base = body
    if in_string:
        trailing_backslashes = len(base) - len(base.rstrip("\\"))
        if trailing_backslashes % 2:
            base = base[:-1]  # a cut escape sequence
        base += '"'
    bases = [base.rstrip()]
    if not in_string:
        # A number or literal cut in half ("tru", "1.") cannot be completed reliably: drop it.
        bases.append(bases[0].rstrip(_SCALAR_CHARS).rstrip())
    for stem in bases:
        for candidate in (stem, stem.rstrip(","), stem + " null", stem + ": null"):
            if _parse(candidate + closers).ok:
                return closers
    return None


def _malformed_features(body: str) -> list[tuple[str, str]]:
    """Each non-JSON habit found outside strings, with an excerpt of its first occurrence."""
    found: dict[str, str] = {}
    for match in _SCAN.finditer(body):
        subtype = match.lastgroup
        if subtype == "word":
            subtype = _WORD_SUBTYPES.get(match.group())
        if subtype is None or subtype in found:
            continue
        lo = max(0, match.start() - 20)
        found[subtype] = body[lo : match.end() + 20].replace("\n", " ")
    return list(found.items())


def _schema_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` fails ``schema``, or None (also when the schema cannot be used)."""
    if not isinstance(schema, dict):
        return None
    try:
        key = json.dumps(schema, sort_keys=True)
    except Exception:  # noqa: BLE001 - an unserialisable schema is simply not checked
        return None
    validator = _validator(key)
    if validator is None:
        return None
    try:
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(value))
    except Exception:  # noqa: BLE001 - a schema that breaks the validator is not a detection
        return None
    if error is None:
        return None
    return f"{error.json_path}: {error.message}"


@functools.lru_cache(maxsize=64)
def _validator(schema_key: str) -> Any:
    """A validator for one schema, or None when jsonschema is absent or the schema is bad."""
    try:
        import referencing
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for
    except ImportError:
        return None
    try:
        schema = json.loads(schema_key)
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        # An explicit empty registry: jsonschema's default one fetches remote $refs over HTTP,
        # and a detector must never block on the network.
        return cls(schema, registry=referencing.Registry())
    except Exception:  # noqa: BLE001
        return None


def _head(text: str) -> str:
    return text[:_EXCERPT_CHARS].replace("\n", " ")


def _tail(text: str) -> str:
    return text[-_EXCERPT_CHARS:].replace("\n", " ")

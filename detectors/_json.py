"""Broken JSON: the application asked for JSON and did not get it.

One class per span, checked in this order:

* ``ok`` (no detection): strict JSON that satisfies the schema, if one was given.
* ``json.schema_invalid``: strict JSON that fails the schema (needs the ``jsonschema`` and
  ``google-re2`` packages, part of the collector extra; without them the schema is not checked).
  Schema patterns run on RE2, in linear time; a schema with a pattern RE2 cannot run is not
  checked (see ``_schema.py``).
* ``json.duplicate_keys``: JSON that is valid but for an object repeating a key. RFC 8259
  allows it (names SHOULD be unique); parsers disagree on which value wins (Python and
  JavaScript keep the last, some keep the first, some refuse), so the answer means different
  things to different readers. A schema is checked on the value Python reads, and failing it
  is ``json.schema_invalid``.
* ``json.wrapped``: valid JSON inside a markdown fence or surrounded by prose (the schema is
  not checked then: the wrapping is the failure to fix first).
* ``json.truncated``: the provider stopped at the token limit, or the text is an unterminated
  structure that would parse once closed.
* ``json.malformed``: anything else; the evidence starts with the subtypes found:
  ``trailing_comma``, ``single_quotes``, ``comments``, ``nan_infinity``, ``python_literals``,
  ``unquoted_keys``, ``nesting_too_deep``, ``empty``, ``no_json``, or ``syntax``.

"Strict" means RFC 8259: Python's ``json`` accepts NaN and Infinity, which most other parsers
reject, so a hook below refuses them; another finds duplicate keys, for their own label. Valid
JSON is valid at any depth:
``nesting_too_deep`` only means that the text ends inside more than ``_MAX_CLOSE_DEPTH`` open
brackets. No answer nests that deep, so that is a runaway (a model repeating ``[``) rather than
an answer cut short, and closing it is not attempted.

The detector runs on every span before the collector acknowledges it, so every step is linear in
time and memory whatever the text: the scanners make one left-to-right pass with patterns that
never go back over more than the token they match, and JSON nested deeper than ``json`` can
recurse is parsed in slices (``_parse_deep``).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._base import (
    EVIDENCE_MAX_CHARS,
    Detection,
    SpanText,
    finish_reasons_of,
    output_text_of,
)
from ._finish_reasons import LENGTH, first_of_kind
from ._schema import schema_check

_orjson: Any
try:  # the collector extra's; the SDK, which reads only the repetition detector, may lack it
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is not installed
    _orjson = None

# The info string is written so that no two repeats can match the same blank: with
# ``[ \t]*[\w+-]*[ \t]*`` the engine retried every split of a long run of blanks (quadratic).
_FENCE = re.compile(r"```[ \t]*(?:[\w+-]+[ \t]*)?\r?\n(.*?)(?:```|\Z)", re.S)

# The escape sequences that decide where a quoted string ends, and backslash-newline, which
# continues a single-quoted line. The scanners run on a copy of the text with each of them
# replaced by two NULs: positions are unchanged, and a string becomes a quote, anything but a
# quote, and a quote, which the regex engine matches in one pass. The escape-aware pattern
# kept a backtracking entry per escape (about 60 bytes for every byte of ``\"\"\"...``).
# ``\\`` goes first: once the pairs are gone, every backslash left escapes the next character.
# Backslashes outside strings (never valid JSON) are paired too, so there ``\"`` opens no string:
# only the subtypes named for such text can differ from an escape-aware scan.
_ESCAPES = ("\\\\", '\\"', "\\'", "\\\n")
_MASK = "\0\0"

# The two scanners below run on masked text, with a Python step per token that matters. Each
# match starts with what does not matter, skipped inside the regex engine: plain characters,
# closed strings and the like, at most 64 of them, since every repetition of a group costs the
# engine a backtracking entry until the match ends (an unbounded one is what cost ~60 bytes per
# byte). Whatever character comes next starts one of the branches after that (a one-character
# fallback and the end of the text are branches too), so a match never fails and makes the
# engine retry the skipped text from a later position; at most, past the 64th, the last item
# skipped is handed back to the branches. Each character is thus read a bounded number of times.

# What changes the nesting: a string left open (or one past the 64 skipped), a run of opening
# brackets, or a run of closing ones. Containers with nothing nested in them are skipped whole.
_BRACKETS = re.compile(
    r"""
    (?: [^"\[\]{}]+ | "[^"]*" | \[[^"\[\]{}]*\] | \{[^"\[\]{}]*\} ){0,64}
    (?: (?P<string>"[^"]*"?) | (?P<open>[\[{]+) | (?P<close>[\]}]+) | \Z )
    """,
    re.X,
)
# The closing bracket each opening one needs: for a run, and for one alone (the usual case).
_CLOSERS_OF = str.maketrans("[{", "]}")
_CLOSER_OF = {"[": b"]", "{": b"}"}

# The habits _malformed_features names. Skipped: strings, so nothing inside one is mistaken for
# a problem; bare words, whole, but for the ones that are habits; and a ``{`` or ``,`` followed
# by something that makes it neither a trailing comma nor the start of an unquoted key (the
# lookahead reads no further than the next token). Other runs of ``{``, ``,`` and blanks are one
# token: only the last bracket or comma can start an unquoted key (matched with it) or be a
# trailing comma, decided in Python from the character after the run, never by a lookahead that
# rescans the rest of the text. A single-quoted string must close on its line, so a failed
# attempt stops at the newline.
_FEATURES = re.compile(
    r"""
    (?: [^"'/\#{,A-Za-z_$]+
      | "[^"]*"
      | (?!(?:NaN|Infinity|True|False|None)(?![\w$]))[A-Za-z_$][\w$]*
      | [{,]\s*(?=[^\s{,}\]/])(?![A-Za-z_$][\w$]*\s*:)
    ){0,64}
    (?:
      (?P<string>"[^"]*"?)
    | (?P<single_quotes>'[^'\n]*')
    | (?P<comments>//[^\n]*|/\*.*?(?:\*/|\Z)|\#[^\n]*)
    | (?P<separators>[{,][\s{,]*)(?P<unquoted_keys>[A-Za-z_$][\w$]*\s*:)?
    | (?P<word>[A-Za-z_$][\w$]*)
    | [/']
    | \Z
    )
    """,
    re.S | re.X,
)
_CLOSERS = frozenset("}]")
# A comment a trailing comma may be followed by, with the blanks after it (a block comment left
# open is not one: at worst this reads to the end once, and the scanner then skips it whole).
_COMMENT_GAP = re.compile(r"(?://[^\n]*|/\*.*?\*/)\s*", re.S)
_WORD_SUBTYPES = {
    "NaN": "nan_infinity",
    "Infinity": "nan_infinity",
    "True": "python_literals",
    "False": "python_literals",
    "None": "python_literals",
}
# What a number or literal cut in half ends with. str.rstrip with a set of characters is
# linear; a regex anchored at the end would retry from every position of a long word.
_SCALAR_CHARS = string.ascii_letters + string.digits + ".+-"

# An unterminated text with more brackets open than this is a runaway, not a cut answer.
_MAX_CLOSE_DEPTH = 512
_EXCERPT_CHARS = 60

# Each slice _parse_deep hands to json.loads nests at most this deep (plus one level of
# containers with nothing nested in them): far below the recursion limit, and deep enough that
# a slice is worth a call.
_DEEP_STEP = 128
# What a slice shows in place of a container cut out of it: a token json.loads hands to the
# parse_constant hook, which returns the container's value.
_HOLE = "NaN"


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
_DEFINITE = frozenset({"nan_infinity"})


def _strict_loads(text: str, parse_constant: Any = _reject_constant, duplicates_ok: bool = False) -> Any:
    hook = None if duplicates_ok else _reject_duplicates
    return json.loads(text, parse_constant=parse_constant, object_pairs_hook=hook)


def _refused(exc: Exception) -> _Parsed:
    if isinstance(exc, _DuplicateKey):
        return _Parsed(False, problem="duplicate_keys", detail=f"key {exc.key!r} repeated")
    if isinstance(exc, _NonStandardConstant):
        return _Parsed(False, problem="nan_infinity", detail=f"bare {exc.constant}")
    # JSONDecodeError, UnicodeDecodeError, huge integers
    return _Parsed(False, problem="syntax", detail=str(exc))


def _parse(text: str, keep_value: bool = False, duplicates_ok: bool = False) -> _Parsed:
    """Parse ``text`` strictly (but for repeated keys with ``duplicates_ok``). ``value`` is
    complete only with ``keep_value``: without it, JSON too deep for ``json.loads`` is checked
    without building its value."""
    if not keep_value and _fast_valid(text, duplicates_ok):
        return _Parsed(True)
    try:
        return _Parsed(True, value=_strict_loads(text, duplicates_ok=duplicates_ok))
    except RecursionError:
        pass  # parsed below, once this exception and its traceback are gone
    except (_DuplicateKey, _NonStandardConstant, ValueError) as exc:
        return _refused(exc)
    return _parse_deep(text, keep_value=keep_value, duplicates_ok=duplicates_ok)


_FAST_MAX_CHARS = 32_768


def _fast_valid(text: str, duplicates_ok: bool) -> bool:
    """True when orjson shows ``text`` is strict JSON without a repeated key; False leaves the
    verdict to the standard parser and its hooks, which also name the problem.

    Valid JSON is the common case, and orjson checks it several times faster than ``json``
    with a Python hook per object. It takes RFC 8259 only (no NaN, no comments; nesting past
    1,024 and lone surrogates it refuses go the standard way), but reads integers beyond 64
    bits as floats, so its value is not used. It keeps the last of repeated keys silently, but
    every colon of JSON text separates a member or is inside a string, and writing the value
    back gives one colon per member kept and every colon its strings hold: the counts differ
    exactly when a member was lost to a repeat, unless a string spells a colon as an escape,
    which goes the standard way too. Its parser reserves about 12 bytes of memory per byte of
    text for a moment, so only text of at most ``_FAST_MAX_CHARS`` goes this way (~0.4 MB).
    """
    if _orjson is None or len(text) > _FAST_MAX_CHARS:
        return False
    try:
        value = _orjson.loads(text)
        if duplicates_ok or ":" not in text:
            return True
        return "\\u003" not in text and _orjson.dumps(value).count(b":") == text.count(":")
    except (ValueError, TypeError, RecursionError):  # orjson.JSONDecodeError is a ValueError
        return False


def _parse_allowing_duplicates(text: str, parsed: _Parsed, keep_value: bool = False) -> _Parsed:
    """``parsed`` again, when repeated keys were its only problem, without refusing them."""
    if parsed.ok or parsed.problem != "duplicate_keys":
        return parsed
    again = _parse(text, keep_value=keep_value, duplicates_ok=True)
    return _Parsed(True, value=again.value, problem="duplicate_keys", detail=parsed.detail) if again.ok else parsed


@dataclass
class _Slice:
    """A container that _DeepParser parses on its own, minus the deeper ones cut out of it."""

    start: int  # where its opening bracket is in the text
    depth: int  # how deep that bracket is (the root slice, the whole text, is 0)
    holes: list[tuple[int, int]] = field(default_factory=list)  # containers cut out, in order
    values: list[Any] = field(default_factory=list)  # and what they parsed to


def _parse_deep(
    text: str, step: int = _DEEP_STEP, keep_value: bool = True, duplicates_ok: bool = False
) -> _Parsed:
    """Parse JSON nested deeper than ``json.loads`` can recurse, without recursion.

    Without ``keep_value`` the value of each slice is dropped once it is parsed: a deep value is
    one object per level, and building (and garbage-collecting) them for nothing is most of the
    cost.
    """
    return _DeepParser(text, step, keep_value, duplicates_ok).parse()


class _DeepParser:
    """Strict JSON parsing at any depth, by slices that ``json.loads`` can handle.

    Every container that opens at depth ``step``, ``2 * step``, ... is cut out of its parent,
    which shows ``NaN`` in its place. Each slice then nests at most ``step`` deep; slices are
    parsed innermost first, and the ``NaN`` hook hands back the value of the container each one
    stands for. The text is valid exactly when every slice is, with the same value. With several
    problems, the one named is the first one in the first slice to close, which need not be the
    first one in the text.
    """

    def __init__(self, text: str, step: int, keep_value: bool, duplicates_ok: bool = False) -> None:
        self.text = text
        self.step = step
        self.keep_value = keep_value
        self.holes: Iterator[Any] = iter(())  # the values of the slice being parsed
        hook = None if duplicates_ok else _reject_duplicates
        self.decoder = json.JSONDecoder(parse_constant=self._fill_hole, object_pairs_hook=hook)

    def parse(self) -> _Parsed:
        masked = _mask_escapes(self.text)
        slices = [_Slice(0, 0)]
        depth, step = 0, self.step
        for match in _BRACKETS.finditer(masked):
            if match.lastgroup == "open":
                start, end = match.span("open")
                # The run's i-th bracket opens depth + 1 + i: a slice starts at each multiple of step.
                if (depth + end - start) // step > depth // step:
                    for level in range(depth // step * step + step, depth + end - start + 1, step):
                        slices.append(_Slice(start + level - depth - 1, level))
                depth += end - start
            elif match.lastgroup == "close":
                start, end = match.span("close")
                # The run's i-th bracket closes depth - i. Brackets with nothing open stay in the
                # root slice, which then fails to parse.
                floor = depth - (end - start)
                while slices[-1].depth > max(floor, 0):
                    inner = slices.pop()
                    failed = self._cut(inner, start + depth - inner.depth + 1, slices[-1])
                    if failed is not None:
                        return failed
                depth = max(floor, 0)
        while len(slices) > 1:  # unterminated: what is still open runs to the end, and fails
            inner = slices.pop()
            failed = self._cut(inner, len(self.text), slices[-1])
            if failed is not None:
                return failed
        return self._parse_slice(slices[0], len(self.text))

    def _cut(self, inner: _Slice, end: int, outer: _Slice) -> _Parsed | None:
        """Parse ``inner``, which ends at ``end``, into a hole of ``outer``; its problem if any."""
        parsed = self._parse_slice(inner, end)
        if not parsed.ok:
            return parsed
        outer.holes.append((inner.start, end))
        outer.values.append(parsed.value if self.keep_value else None)
        return None

    def _parse_slice(self, piece: _Slice, end: int) -> _Parsed:
        text = self.text
        parts: list[str] = []
        origins: list[tuple[int, int]] = []  # (offset in the slice, offset in text) of each part
        at, size = piece.start, 0
        for hole_start, hole_end in piece.holes:
            origins.append((size, at))
            parts += (text[at:hole_start], _HOLE)
            size += hole_start - at + len(_HOLE)
            at = hole_end
        origins.append((size, at))
        parts.append(text[at:end])
        self.holes = iter(piece.values)
        try:
            return _Parsed(True, value=self.decoder.decode("".join(parts)))
        except json.JSONDecodeError as exc:
            where = _origin(origins, exc.pos)
            return _Parsed(False, problem="syntax", detail=str(json.JSONDecodeError(exc.msg, text, where)))
        except (_DuplicateKey, _NonStandardConstant, ValueError) as exc:
            return _refused(exc)

    def _fill_hole(self, constant: str) -> Any:
        # A genuine NaN takes the value of a hole, and the last hole then finds none left: the
        # slice is refused either way.
        if constant == _HOLE:
            for value in self.holes:
                return value
        raise _NonStandardConstant(constant)


def _origin(origins: list[tuple[int, int]], pos: int) -> int:
    """Where position ``pos`` of a slice is in the text; a hole maps to its container's start."""
    offset, at = origins[0]
    for part_offset, part_at in origins:
        if part_offset > pos:
            break
        offset, at = part_offset, part_at
    return at + pos - offset


class JsonDetector:
    """Classify the answer of a span that was expected to be JSON.

    Does nothing unless ``span.expect_json``. Schema validators are compiled once per distinct
    schema and cached (bounded); remote ``$ref`` is never fetched. Pure CPU, safe to share
    between threads, never raises from ``detect``. Linear in time and memory in the length of
    the answer (the schema check aside, which is as fast as ``jsonschema``).
    """

    name = "json"
    version = "1.1"

    def detect(self, span: SpanText) -> list[Detection]:
        """Return one ``json.*`` detection, or nothing when JSON was not expected or is ok."""
        if not span.expect_json:
            return []
        reasons = finish_reasons_of(span)
        cut_by = first_of_kind(reasons, LENGTH)
        verdict = _classify(
            output_text_of(span), cut_by or (reasons[0] if reasons else ""), cut_by is not None,
            span.json_schema,
        )
        if verdict is None:
            return []
        kind, evidence = verdict
        return [Detection(self.name, self.version, f"json.{kind}", 1.0, evidence)]


def _classify(raw: str, finish_reason: str, cut: bool, schema: Any) -> tuple[str, str] | None:
    text = raw.strip()
    if not text:
        if cut:
            return "truncated", f"empty output, finish_reason={finish_reason}"
        return "malformed", "empty: no JSON in the output"

    runaway = _runaway(text)
    if runaway is not None:
        body, depth = runaway
        if cut:
            return "truncated", f"finish_reason={finish_reason}: …{_tail(body)}"
        return "malformed", f"nesting_too_deep: ends inside {depth} open brackets: …{_tail(body)}"

    keep = isinstance(schema, dict)
    whole = _parse_allowing_duplicates(text, _parse(text, keep_value=keep), keep_value=keep)
    if whole.ok:
        problem = _schema_problem(whole.value, schema)
        if problem is not None:
            return "schema_invalid", problem
        return None if not whole.problem else ("duplicate_keys", whole.detail)
    if whole.problem in _DEFINITE:
        return "malformed", f"{whole.problem}: {whole.detail}"

    body = text
    unwrapped = _unwrap(text)
    if unwrapped is not None:
        body, wrapper, inner = unwrapped
        inner = _parse_allowing_duplicates(body, inner)
        if inner.ok:
            return "wrapped", f"{wrapper}: {_head(body)}"
        if inner.problem in _DEFINITE:
            return "malformed", f"{inner.problem} ({wrapper}): {inner.detail}"

    if cut:
        return "truncated", f"finish_reason={finish_reason}: …{_tail(body)}"
    return _diagnose(body)


def _runaway(text: str) -> tuple[str, int] | None:
    """The JSON part of ``text`` and its depth, when it only opens brackets, more than
    ``_MAX_CLOSE_DEPTH`` of them outside strings, and closes none.

    What the full path concludes for such text (it cannot parse, nor close), found by counting
    at C speed: the full path takes a Python step per bracket in two scans, 90 ms for 250 KB of
    ``{"a": `` where this takes under a millisecond.
    """
    if "]" in text or "}" in text or "```" in text:
        return None
    if text.count("[") + text.count("{") <= _MAX_CLOSE_DEPTH:
        return None
    start = min(i for i in (text.find("["), text.find("{")) if i >= 0)
    if '"' in text[:start]:
        return None  # the first bracket may be inside a string: the full path decides
    body = text[start:]
    depth = _opened_outside_strings(_mask_escapes(body))
    return (body, depth) if depth > _MAX_CLOSE_DEPTH else None


def _opened_outside_strings(masked: str, chunk: int = 16_384) -> int:
    """How many ``[`` and ``{`` of ``masked`` are outside strings. Escapes masked, every quote
    opens or closes a string, so the pieces between quotes alternate outside and inside; a
    chunk at a time keeps the pieces' memory small."""
    depth, inside = 0, False
    for lo in range(0, len(masked), chunk):
        pieces = masked[lo : lo + chunk].split('"')
        outside = "".join(pieces[1::2] if inside else pieces[::2])
        depth += outside.count("[") + outside.count("{")
        inside ^= len(pieces) % 2 == 0
    return depth


def _diagnose(body: str) -> tuple[str, str]:
    """Why ``body``, which does not parse, is broken: cut short, or the habits that break it."""
    masked = _mask_escapes(body)
    shape = _shape(masked)
    if shape is not None and len(shape.closers) > _MAX_CLOSE_DEPTH:
        return "malformed", f"nesting_too_deep: ends inside {len(shape.closers)} open brackets: …{_tail(body)}"
    if shape is not None and _closes_to_valid(body, shape):
        return "truncated", f"unterminated, closes with {shape.closers!r}: …{_tail(body)}"

    if "{" not in body and "[" not in body:
        return "malformed", f"no_json: {_head(body)}"
    found = _malformed_features(body, masked)
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


def _mask_escapes(text: str) -> str:
    """``text`` with the escapes in ``_ESCAPES`` replaced by NULs: same length, same positions."""
    if "\\" not in text:
        return text
    for escape in _ESCAPES:
        text = text.replace(escape, _MASK)
    return text


@dataclass(frozen=True)
class _Shape:
    closers: str  # what closes the brackets left open, innermost first ("" when none are)
    in_string: bool  # the text ends inside a double-quoted string


def _shape(masked: str) -> _Shape | None:
    """The brackets ``masked`` leaves open, or None when a closing bracket does not match."""
    owed = bytearray()  # the closing bracket each open one needs, innermost last
    in_string = False
    for match in _BRACKETS.finditer(masked):
        kind = match.lastgroup
        if kind == "open":
            run = match.group(kind)
            owed += _CLOSER_OF[run] if len(run) == 1 else run.translate(_CLOSERS_OF).encode()
        elif kind == "close":
            run = match.group(kind).encode()[::-1]  # its first bracket closes the innermost one
            if not owed.endswith(run):
                return None  # a mismatched bracket is broken, not cut short
            del owed[len(owed) - len(run) :]
        elif kind == "string":
            # Only the last string can be open: an unterminated one runs to the end.
            start, end = match.span(kind)
            in_string = end - start < 2 or masked[end - 1] != '"'
    return _Shape(owed[::-1].decode(), in_string)


def _closes_to_valid(body: str, shape: _Shape) -> bool:
    """Whether the unterminated ``body`` parses once ``shape.closers`` are appended."""
    if not shape.closers:
        return False
    base = body
    if shape.in_string:
        trailing_backslashes = len(base) - len(base.rstrip("\\"))
        if trailing_backslashes % 2:
            base = base[:-1]  # a cut escape sequence
        base += '"'
    return any(
        _parse(candidate + shape.closers, duplicates_ok=True).ok for candidate in _endings(base, shape.in_string)
    )


def _endings(base: str, in_string: bool) -> Iterator[str]:
    """Ways to end ``base`` so that closing brackets can follow, likeliest first (lazily: each
    one is a copy of the text)."""
    stems = [base.rstrip()]
    if not in_string:
        # A number or literal cut in half ("tru", "1.") cannot be completed reliably: drop it.
        stems.append(stems[0].rstrip(_SCALAR_CHARS).rstrip())
    for stem in stems:
        yield stem
        yield stem.rstrip(",")
        yield stem + " null"
        yield stem + ": null"


def _malformed_features(body: str, masked: str) -> list[tuple[str, str]]:
    """Each non-JSON habit found outside strings, with an excerpt of its first occurrence."""
    first: dict[str, tuple[int, int]] = {}  # subtype -> span of its first occurrence
    for match in _FEATURES.finditer(masked):
        kind = match.lastgroup
        if kind == "word":
            subtype = _WORD_SUBTYPES.get(match.group(kind))
            if subtype is not None:
                first.setdefault(subtype, match.span(kind))
        elif kind == "separators":
            if "trailing_comma" in first:
                continue
            start, end = match.span(kind)
            following = masked[end : end + 1]
            if following == "/":
                after = _past_comments(masked, end)
                following = masked[after : after + 1]
            if following in _CLOSERS:
                last = max(masked.rfind(",", start, end), masked.rfind("{", start, end))
                if masked[last] == ",":
                    first["trailing_comma"] = (last, last + 1)
        elif kind == "unquoted_keys":
            start, end = match.span("separators")
            last = max(masked.rfind(",", start, end), masked.rfind("{", start, end))
            first.setdefault(kind, (last, match.end(kind)))
        elif kind is not None and kind != "string":  # comments, single_quotes
            first.setdefault(kind, match.span(kind))
    spans = sorted(first.items(), key=lambda item: item[1][0])
    return [(subtype, _excerpt(body, lo, hi)) for subtype, (lo, hi) in spans]


def _past_comments(masked: str, pos: int) -> int:
    """Where the comments at ``pos`` (line comments and closed block comments, and the blanks
    after each) end: only they may stand between a trailing comma and its bracket.

    Called after a comma, this reads no further than the next token, so no character is read
    more than twice: here and by the scanner.
    """
    while True:
        gap = _COMMENT_GAP.match(masked, pos)
        if gap is None:
            return pos
        pos = gap.end()


def _excerpt(body: str, lo: int, hi: int) -> str:
    # A token can be long (a block comment left open runs to the end): keep what evidence shows.
    return body[max(0, lo - 20) : min(hi, lo + EVIDENCE_MAX_CHARS) + 20].replace("\n", " ")


def _schema_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` fails ``schema``, or None (also when the schema cannot be used: see
    :func:`~._schema.schema_check`, which the collector counts as not analysed)."""
    if not isinstance(schema, dict):
        return None
    validator = schema_check(schema).validator
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


def _head(text: str) -> str:
    return text[:_EXCERPT_CHARS].replace("\n", " ")


def _tail(text: str) -> str:
    return text[-_EXCERPT_CHARS:].replace("\n", " ")

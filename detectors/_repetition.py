"""Repetition loops: the model says the same thing again and again until the token limit.

Two rules, both on the end of the answer because that is where a loop lives:

* hard (``repetition.loop``): the tail is periodic, one unit of at most 64 tokens repeated
  at least 3 full times over at least 48 tokens; the text may stop in the middle of a copy
  (even in the middle of a word) because the token limit cuts wherever it falls.
* soft (``repetition.suspect``): in the last ~1000 characters of prose, more than half of the
  4-grams are repeats and zlib compresses the text more than 2.4 times. This catches loops that
  drift a little between copies, which the hard rule cannot see.

Digit runs are read as ``0`` so that a counter ("step 18, step 19") does not hide a loop. A loop
seen only after that normalisation must be prose, and its numbers must count up or down by
one from copy to copy: otherwise a list of measurements ("Week 1: 5 km, Week 2: 7 km") would
look like a loop. Fenced code, markdown tables, JSON and lists of distinct bullet points repeat
their shape by design, so the soft rule does not look at them.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

from ._base import Detection, SpanText, check_param, output_text_of, positive_int

# CJK and kana have no spaces between words: one token per character keeps units comparable
# in size with space-separated languages.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]+")
_HAS_CJK = re.compile(rf"[{_CJK}]")
_WORD_OR_PUNCT = re.compile(r"\w+|[^\w\s]+")
_DIGITS = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")
_LIST_ITEM = re.compile(r"(?:[-*+•]|\d{1,3}[.)])\s+(.*)")
_SENTENCE_END = re.compile(r"[.!?。！？]+")
_JSON_MEMBER = re.compile(r'"[^"]*"\s*:')
_FENCE = ("```", "~~~")

# Below this many tokens of prose the 4-gram share is too noisy to mean anything.
_SOFT_MIN_TOKENS = 40
# A counter needs this many digits at most; it also keeps int() away from huge digit runs.
_COUNTER_MAX_DIGITS = 12


@dataclass(frozen=True)
class _Loop:
    start: int  # first token of the periodic region
    end: int  # one past its last token
    period: int


class RepetitionDetector:
    """Find repetition loops at the end of an answer.

    Keyword-only parameters (the defaults are the issue's thresholds):
        max_unit_tokens: the longest repeating unit the hard rule looks for.
        min_copies: how many full copies make a loop.
        min_loop_tokens: how many tokens the loop must cover.
        tail_chars: how much of the end of the answer the hard rule reads; 3 copies of a
            64-token unit fit in the default.
        soft_window_chars: how much trailing prose the soft rule reads.
        soft_ngram_share: the repeated 4-gram share the soft rule must exceed.
        soft_compression_ratio: the zlib ratio the soft rule must exceed.

    Pure CPU on a bounded tail of the text: safe to share between threads, never raises
    from ``detect``.
    """

    name = "repetition"
    version = "1.0"

    def __init__(
        self,
        *,
        max_unit_tokens: int = 64,
        min_copies: int = 3,
        min_loop_tokens: int = 48,
        tail_chars: int = 2400,
        soft_window_chars: int = 1000,
        soft_ngram_share: float = 0.5,
        soft_compression_ratio: float = 2.4,
    ) -> None:
        owner = type(self).__name__
        for pname, value in (
            ("max_unit_tokens", max_unit_tokens),
            ("min_copies", min_copies),
            ("min_loop_tokens", min_loop_tokens),
            ("tail_chars", tail_chars),
            ("soft_window_chars", soft_window_chars),
        ):
            check_param(owner, pname, value, positive_int(value), "a positive int")
        check_param(
            owner, "min_copies", min_copies, min_copies >= 2, "an int of at least 2"
        )
        check_param(
            owner, "soft_ngram_share", soft_ngram_share,
            isinstance(soft_ngram_share, (int, float)) and 0 <= soft_ngram_share < 1,
            "a number in [0, 1)",
        )
        check_param(
            owner, "soft_compression_ratio", soft_compression_ratio,
            isinstance(soft_compression_ratio, (int, float)) and soft_compression_ratio > 0,
            "a positive number",
        )
        self.max_unit_tokens = max_unit_tokens
        self.min_copies = min_copies
        self.min_loop_tokens = min_loop_tokens
        self.tail_chars = tail_chars
        self.soft_window_chars = soft_window_chars
        self.soft_ngram_share = soft_ngram_share
        self.soft_compression_ratio = soft_compression_ratio

    def detect(self, span: SpanText) -> list[Detection]:
        """Return one ``repetition.loop`` or ``repetition.suspect`` detection, or nothing."""
        text = output_text_of(span)
        window = text[-self.tail_chars :]
        raw_tokens = _tokens(window)
        loop = self._hard(text, window, raw_tokens, bool(span.expect_json))
        if loop is not None:
            return [loop]
        if span.expect_json:
            return []
        prose = _prose_tail(text, self.soft_window_chars)
        # A short answer of plain prose is its own tail: tokenise it once, not twice.
        suspect = self._soft(prose, raw_tokens if prose == window else _tokens(prose))
        return [suspect] if suspect is not None else []

    # -- hard rule ---------------------------------------------------------------------------

    def _hard(self, text: str, window: str, raw_tokens: list[str], expect_json: bool) -> Detection | None:
        if len(raw_tokens) < self.min_loop_tokens:
            return None
        loop = self._periodic_tail(raw_tokens, None)
        if loop is None and not expect_json and _counters_allowed(text, window):
            norm_tokens = _normalise(raw_tokens)
            if norm_tokens is not raw_tokens:
                loop = self._periodic_tail(norm_tokens, raw_tokens)
        if loop is None:
            return None
        unit = _unit_text(window, loop)
        return Detection(self.name, self.version, "repetition.loop", 1.0, unit)

    def _periodic_tail(self, tokens: list[str], raw_tokens: list[str] | None) -> _Loop | None:
        """The smallest unit whose repetition covers the end of ``tokens``.

        ``raw_tokens`` is given when ``tokens`` are digit-normalised: the loop must then be
        made of prose whose only differences between copies are counters.
        """
        total = len(tokens)
        # The last token may be a word the token limit cut in half: try without it too.
        for end in (total, total - 1):
            if end < 2:
                continue
            last = tokens[end - 1]
            # Only a period at which the last token repeats can be a loop's: one pass in C-speed
            # comprehension instead of a function call per candidate period.
            longest = min(self.max_unit_tokens, end // self.min_copies)
            candidates = [p for p in range(1, longest + 1) if tokens[end - 1 - p] == last]
            for period in candidates:
                covered = _periodic_run(tokens, end, period) + period
                if covered < self.min_copies * period or covered < self.min_loop_tokens:
                    continue
                loop = _Loop(start=end - covered, end=end, period=period)
                if raw_tokens is None or _counters_only(raw_tokens, loop):
                    return loop
        return None

    # -- soft rule ---------------------------------------------------------------------------

    def _soft(self, prose: str, raw_tokens: list[str]) -> Detection | None:
        tokens = _normalise(raw_tokens)
        if len(tokens) < _SOFT_MIN_TOKENS:
            return None
        # After digit normalisation a run of numbers is "0 , 0 , 0": its 4-grams repeat
        # without anything being said twice, so only 4-grams with a word in them count.
        # (isalpha() first: C-speed, and a token it accepts always has a letter.)
        wordy = {token for token in set(tokens) if token.isalpha() or _LETTER.search(token)}
        grams = [
            gram
            for gram in zip(tokens, tokens[1:], tokens[2:], tokens[3:], strict=False)
            if gram[0] in wordy or gram[1] in wordy or gram[2] in wordy or gram[3] in wordy
        ]
        if len(grams) < _SOFT_MIN_TOKENS:
            return None
        counts = Counter(grams)
        share = 1.0 - len(counts) / len(grams)
        if share <= self.soft_ngram_share:
            return None
        raw = prose.encode("utf-8", "surrogatepass")
        ratio = len(raw) / len(zlib.compress(raw))
        if ratio <= self.soft_compression_ratio:
            return None
        return Detection(
            self.name, self.version, "repetition.suspect", share, _most_repeated(tokens)
        )


def _tokens(text: str) -> list[str]:
    """``_TOKEN.findall(text)``, about twice as fast for prose without CJK, a little faster
    for JSON and code.

    Python's regex engine spends ~90 ns a character on ``_TOKEN``; ``str.split`` and
    ``isalnum`` run in C. Tokens never span whitespace, and without CJK ``_TOKEN`` is
    ``\\w+|[^\\w\\s]+``, where ``\\w`` is exactly ``isalnum()`` or ``_``: a chunk that
    ``isalnum()`` is one token, any other chunk is split by the regex.
    """
    if _HAS_CJK.search(text):
        return _TOKEN.findall(text)
    if text.lstrip()[:1] in ("{", "["):  # JSON: punctuation everywhere, one regex pass is cheapest
        return _WORD_OR_PUNCT.findall(text)
    out: list[str] = []
    words = punctuated = 0
    for chunk in text.split():
        if chunk.isalnum():
            out.append(chunk)
            words += 1
            continue
        punctuated += 1
        if punctuated > 8 and punctuated > words:
            # Code or the like: one regex pass over the whole text is cheaper than one per chunk.
            return _WORD_OR_PUNCT.findall(text)
        out += _WORD_OR_PUNCT.findall(chunk)
    return out


def _normalise(tokens: list[str]) -> list[str]:
    """``tokens`` with every digit run read as ``0``; the same list when there are none."""
    # A digit run inside a word stays inside that word, so the normalised tokens line up
    # with the raw ones position for position.
    mapping = {
        token: _DIGITS.sub("0", token)
        for token in set(tokens)
        if not token.isalpha() and _DIGITS.search(token)
    }
    if not mapping:
        return tokens
    return [mapping.get(token, token) for token in tokens]


def _periodic_run(tokens: list[str], end: int, period: int) -> int:
    """How many tokens before ``end`` equal the token ``period`` places earlier.

    ``tokens[end-L:end] == tokens[end-L-period:end-period]`` holds for every L up to the
    answer and for none above it, so galloping then bisecting needs O(log n) slice
    comparisons, each run by list equality in C: no O(n^2) scan over candidate periods.
    """
    limit = end - period
    if limit <= 0 or tokens[end - 1] != tokens[end - 1 - period]:
        return 0
    good, bad = 1, None
    while bad is None:
        probe = min(good * 2, limit)
        if tokens[end - probe : end] == tokens[end - probe - period : end - period]:
            good = probe
            if probe == limit:
                return limit
        else:
            bad = probe
    while bad - good > 1:
        mid = (good + bad) // 2
        if tokens[end - mid : end] == tokens[end - mid - period : end - period]:
            good = mid
        else:
            bad = mid
    return good


def _counters_only(raw_tokens: list[str], loop: _Loop) -> bool:
    """True when copies differ only by numbers stepping by one: a loop with a counter."""
    period, start, end = loop.period, loop.start, loop.end
    unit = raw_tokens[end - period : end]
    if not any(_LETTER.search(token) for token in unit):
        return False  # a run of bare numbers is data, not a loop with a counter
    if any("|" in token for token in unit):
        return False  # table rows share a shape by design
    steps: dict[int, int] = {}
    for i in range(start + period, end):
        before, after = raw_tokens[i - period], raw_tokens[i]
        if before == after:
            continue
        a, b = _DIGITS.findall(before), _DIGITS.findall(after)
        if len(a) != 1 or len(b) != 1 or max(len(a[0]), len(b[0])) > _COUNTER_MAX_DIGITS:
            return False
        step = int(b[0]) - int(a[0])
        if step not in (1, -1) or steps.setdefault((i - start) % period, step) != step:
            return False
    return True


def _unit_text(window: str, loop: _Loop) -> str:
    """One copy of the unit as the model wrote it, ending at a sentence end when it has one."""
    matches = list(_TOKEN.finditer(window))
    if loop.end > len(matches):  # defensive: the two tokenisations always agree in length
        return ""
    last = loop.end - 1
    # Counted back from the end, a copy may start mid-sentence (the text stopped mid-copy);
    # ending it at a full stop gives the sentence the model keeps repeating.
    for index in range(loop.end - 1, loop.end - 1 - loop.period, -1):
        if _SENTENCE_END.fullmatch(matches[index].group()):
            if index - loop.period + 1 >= loop.start:
                last = index
            break
    first = last - loop.period + 1
    return window[matches[first].start() : matches[last].end()]


def _counters_allowed(text: str, window: str) -> bool:
    """Whether a loop may hide behind counters here: not in code, not in JSON.

    Code (an open fence) and JSON records number their lines and items by design.
    """
    if text.count("```") % 2 == 1:
        return False
    return window.lstrip()[:1] not in ("{", "[") and text.lstrip()[:1] not in ("{", "[")


def _prose_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of prose: code, tables, JSON and distinct bullets removed."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        return ""  # the whole answer is JSON (or an attempt at it)
    # Code and tables at the end can hide the prose before them; reading a bounded multiple
    # of the window keeps huge answers cheap.
    scan_from = max(0, len(text) - 16 * limit)
    in_fence = text.count("```", 0, scan_from) % 2 == 1
    seen_items: set[str] = set()
    kept: list[str] = []
    for line in text[scan_from:].splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if stripped.startswith("|") or stripped.count("|") >= 2:
            continue
        if stripped[:1] in ("{", "}", "[", "]") or _JSON_MEMBER.match(stripped):
            continue
        item = _LIST_ITEM.match(stripped)
        if item is not None:
            # Bullets that each say something different share a template by design; a
            # bullet that comes back word for word is what a looping list looks like.
            key = item.group(1).casefold()
            if key not in seen_items:
                seen_items.add(key)
                continue
        kept.append(line)
    return "".join(kept)[-limit:]


def _most_repeated(tokens: list[str]) -> str:
    """The longest frequently repeated phrase, as evidence for the soft rule."""
    for size in (16, 8, 4):
        grams = Counter(zip(*(tokens[i:] for i in range(size)), strict=False))
        if grams:
            gram, count = grams.most_common(1)[0]
            if count >= 2 or size == 4:
                return " ".join(gram)
    return ""

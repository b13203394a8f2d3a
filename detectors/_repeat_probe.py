"""Cheap checks, at C speed, that let the repetition detector skip text that cannot loop.

Tokenising a tail and scoring its 4-grams costs a Python step per token (~300 µs a KB on a
loaded machine); most answers repeat nothing, and these checks show it with a byte
translation and a few substring searches.

Both read the text with whitespace removed. Every non-blank character belongs to exactly one
token, so the tokens of any stretch, written one after the other, are that stretch of the
stripped text: a run of tokens repeated with a period of ``p`` tokens is a run of characters
repeated with a period of ``P`` characters, ``P`` being the length of one copy.

* :func:`may_loop` is a proof for the hard rule on ASCII text. A loop covers at least three
  copies, or at least ten, or 48 tokens: enough that the last ``_LOOP_PROBE`` characters of
  the loop (at the end of the text, or before its last token, which the token limit may have
  cut) appear again one period earlier, ending at least one token before. When they appear
  nowhere, no loop ends there. With digits deleted as well, the same holds for loops whose
  copies differ only by counters, provided a copy keeps at least four characters that are not
  digits or is repeated at least nine times (a copy must hold a letter; shorter ones with fewer
  copies are kept out of this proof by nothing but their rarity, and the corpora never hold one).
* :func:`may_repeat` is a screen for the repeat score, which no cheap count bounds: a few
  probes spread over the part of the tail the score reads, each searched for earlier. Its
  sizes were chosen on the loop corpora (``tests/detectors/loop_corpus.py``) so that every
  answer the score flags has at least ``_MIN_HITS`` probes found, with seeds the choice was not
  made on checked by tests/detectors/test_repeat_probe.py; it is used only at thresholds at
  least as strict as the one it was checked at.
"""

from __future__ import annotations

import functools
import operator
import string
from collections.abc import Callable

# ASCII blanks, as ``\\s`` and ``str.split`` read them (the four separators included);
# tokens never span them. Other text is not screened by may_loop.
_BLANK_CHARS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_BLANKS = _BLANK_CHARS.encode()
_WORD_CHARS = string.ascii_letters + string.digits + "_"
_PUNCT_CHARS = "".join(c for c in map(chr, range(128)) if c not in _WORD_CHARS and c not in _BLANK_CHARS)
_DIGITS = b"0123456789"
_LOOP_PROBE = 24

# The screen's probes: this many bytes each, this many of them, spread over this much of the
# end of the stripped tail (about the last 150 4-grams the score reads).
_PROBE_BYTES = 24
_PROBES = 16
_PROBE_SPAN = 640
_MIN_HITS = 1
# The repeat score reads no tail shorter than this many tokens (``_SOFT_MIN_TOKENS`` there).
_SOFT_MIN_TOKENS = 40
_ZEROS = (0,) * _PROBES
_IS_FOUND = (-1).__lt__
SCREENED_FROM_THRESHOLD = 0.29
"""The lowest raw repeat threshold at which :func:`may_repeat` was checked on the corpora."""


def may_loop(window: str, max_unit_tokens: int, counters: bool = True) -> bool:
    """False only when no token loop can end ``window`` (see the module docstring); with
    ``counters`` False, only loops whose copies are equal (the hard rule reads JSON and code so).

    True means "could": the hard rule must look. Linear, at C speed.
    """
    if not window.isascii():
        return True
    last_two = _last_two_tokens(window)
    if last_two is None:
        return True
    before, last = last_two
    raw = window.encode().translate(None, _BLANKS)
    # A copy holds at most max_unit_tokens tokens, so it lies within that many blank-separated
    # chunks (and one more, for a cut last token): its stripped length is at most theirs.
    # Counted only when a probe is found, which ordinary text seldom does.
    bound = _CopyBound(window, max_unit_tokens + 2)
    if _ends_in_repeat(raw, last, before, bound):
        return True
    if not counters:
        return False
    bare = raw.translate(None, _DIGITS)
    if len(bare) == len(raw):
        return False  # no digits: the same bytes, the same answer as above
    return _ends_in_repeat(bare, last.translate(None, _DIGITS), before.translate(None, _DIGITS), bound)


def _last_two_tokens(window: str) -> tuple[bytes, bytes] | None:
    """The last two tokens of ASCII ``window`` (None when it holds fewer than three), found by
    stripping runs of one kind of character off its end, each at C speed."""
    text = window.rstrip(_BLANK_CHARS)
    last = _last_token(text)
    rest = text[: len(text) - len(last)].rstrip(_BLANK_CHARS)
    before = _last_token(rest)
    if not last or not before or not rest[: len(rest) - len(before)].strip(_BLANK_CHARS):
        return None
    return before.encode(), last.encode()


def _last_token(text: str) -> str:
    """The token that ends ``text`` (which ends in no blank): its run of word characters, or
    of punctuation, as ``\\w+|[^\\w\\s]+`` reads ASCII."""
    if not text:
        return ""
    kind = _WORD_CHARS if text[-1] in _WORD_CHARS else _PUNCT_CHARS
    return text[len(text.rstrip(kind)) :]


class _CopyBound:
    """The most bytes one copy of a loop's unit can hold, counted once, when first asked."""

    def __init__(self, window: str, chunks: int) -> None:
        self.window, self.chunks, self.value = window, chunks, -1

    def __call__(self) -> int:
        if self.value < 0:
            parts = self.window.rsplit(None, self.chunks)
            self.value = len(self.window) - len(parts[0]) if len(parts) > self.chunks else len(self.window)
        return self.value


def _ends_in_repeat(stripped: bytes, last: bytes, before: bytes, longest: _CopyBound) -> bool:
    """Whether a run repeated with some period ``P`` (at least three copies) can end the text,
    or end it before its last token: for ``P`` under ``_LOOP_PROBE // 2``, the last ``2P``
    bytes equal the ``2P`` before them shifted by ``P``; for longer periods, the last
    ``_LOOP_PROBE`` bytes (at most ``2P``) appear again ending ``P`` bytes earlier, and so at
    least as early as one copy, which holds the run's last token, is long, and no earlier than
    ``longest()``, the most a copy can be."""
    short = _LOOP_PROBE // 2
    for end, token in ((len(stripped), last), (len(stripped) - len(last), before)):
        if end < _LOOP_PROBE + short or not token:
            return True
        if len(token) < short and _short_period(stripped[end - 3 * short : end], len(token), short):
            return True
        at = stripped.rfind(stripped[end - _LOOP_PROBE : end], 0, end - max(short, len(token)))
        if at >= 0 and at + _LOOP_PROBE >= end - longest():
            return True
    return False


def _short_period(tail: bytes, shortest: int, short: int) -> bool:
    """Whether ``tail`` ends in three copies of a unit of ``shortest`` to ``short - 1`` bytes."""
    # Such a run repeats its last two bytes one period earlier: one search rules most text out.
    size = len(tail)
    if tail.find(tail[-2:], size - 1 - short, size - max(1, shortest)) < 0:
        return False
    return any(tail[-2 * p :] == tail[-3 * p : -p] for p in range(max(1, shortest), short))


def may_repeat(prose: str) -> bool:
    """False when the end of ``prose`` says nothing again that it said before, as far as the
    probes see: the repeat score then stays below ``SCREENED_FROM_THRESHOLD``."""
    stripped = prose.encode("utf-8", "surrogatepass").translate(None, _BLANKS + _DIGITS)
    size = len(stripped)
    if size < _SOFT_MIN_TOKENS:
        return False  # fewer tokens than the score reads: a token is at least one byte
    lo = max(0, size - _PROBE_SPAN)
    if size - lo < _PROBE_BYTES * 2:
        return True
    cut, ends = _probe_plan(size - lo)
    # All probes cut out in one call and searched through map: no bytecode per probe.
    found = map(stripped.find, cut(stripped), _ZEROS, ends)
    return sum(map(_IS_FOUND, found)) >= _MIN_HITS


@functools.cache  # one entry per span: at most _PROBE_SPAN + 1
def _probe_plan(span: int) -> tuple[Callable[[bytes], tuple[bytes, ...]], tuple[int, ...]]:
    """Where the probes lie in the last ``span`` bytes, counted from the end (so one plan
    serves every text): a getter that cuts them all out, and where each search must stop so
    that only a start before the probe's own counts."""
    starts = [(span - _PROBE_BYTES) * i // (_PROBES - 1) - span for i in range(_PROBES)]
    cut = operator.itemgetter(*(slice(at, at + _PROBE_BYTES or None) for at in starts))
    return cut, tuple(at + _PROBE_BYTES - 1 for at in starts)

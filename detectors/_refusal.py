"""Refusals: the provider blocked the answer, or the model declined to give one.

* ``refusal.provider_block``: a content-filter or safety finish reason in any choice (the
  kinds are in ``FINISH_REASON_KINDS``).
* ``refusal.field``: the provider's own refusal field is filled (OpenAI's ``message.refusal``).
* ``refusal.phrase``: the answer declines: refusal phrasing and little else.
* ``refusal.partial``: the answer helps with part and declines the rest, the refusal before
  or after the help (code included).

The phrase rules (in ``_refusal_phrases``, twelve languages) name the act of declining ("I
can't help with", "no puedo ayudar", "お答えできません"), not any apology or "can't": "I'm
sorry to hear that" and "I can't believe" are ordinary answers. A refusal is one only where
the answer speaks for itself:

1. not inside fenced code (a test asserting the bot's refusal text);
2. not inside quotation marks or a ``>`` block quote, nor right after "says", "like", "reads"
   or a colon (an answer quoting or discussing a refusal);

and it is partial when what is left of the answer outside the refusal sentences is code or
more than ``_HELP_WEIGHT`` characters (CJK counted three-fold, a character being a word).
"""

from __future__ import annotations

import re

from ._base import Detection, SpanText, finish_reasons_of, output_text_of
from ._finish_reasons import CONTENT_FILTER, first_of_kind
from ._refusal_phrases import (
    CJK_ANCHOR,
    CJK_ANCHORS,
    CJK_LANGUAGES,
    PHRASES,
    PHRASES_ANY_CASE,
    REACH_CHARS,
    TAIL_CHARS,
    WORD_ANCHOR,
    WORD_ANCHOR_ASCII,
    WORD_ANCHORS,
    WORD_STARTS,
)

# End of a sentence: Latin, CJK, Devanagari danda, Arabic question mark, a line break.
_SENTENCE_END = re.compile(r"[.!?。！？।؟\n]")
_TERMINATORS = ".!?。！？।؟\n"
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
# Quotation marks that open and close with the same or a paired glyph; apostrophes are left
# out, being part of "can't" and "l'aide".
_QUOTES = frozenset('"“”„«»「」『』`')
_REPORTED = re.compile(
    r"(?:\b(?:says?|(?<!that\s)said|repl(?:y|ies|ied)|responds?|responded|like|such\s+as|reads?|returns?|"
    r"answers?\s+with|shows?|message|phrase)\W*|[:：]\W*|['‘]\s*)$",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_SPACE = re.compile(r"\s+")
# What an answer must hold besides its refusal sentences to be a partial refusal: about two
# sentences of help. Closing courtesies ("Is there something else I can help with?", "please
# contact local emergency services") stay under it.
_HELP_WEIGHT = 200
# A sentence longer than this around a match is cut there: the evidence and the quote check
# stay bounded on text without punctuation.
_SENTENCE_MAX_CHARS = 400
_SHORT_ANSWER_CHARS = 500


class RefusalDetector:
    """Find provider blocks, refusal fields and refusals (whole or partial) in one answer.

    Reads the whole answer once: linear time in its length (one regular-expression scan, plus
    bounded work per refusal found). Safe to share between threads, never raises from
    ``detect``.
    """

    name = "refusal"
    version = "2.0"

    def detect(self, span: SpanText) -> list[Detection]:
        """Return every refusal signal found; several may fire for one span."""
        found: list[Detection] = []
        reason = first_of_kind(finish_reasons_of(span), CONTENT_FILTER)
        if reason is not None:
            found.append(
                Detection(
                    self.name, self.version, "refusal.provider_block", 1.0,
                    f"finish_reason={reason}",
                )
            )
        field = span.refusal_field
        if isinstance(field, str) and field.strip():
            found.append(
                Detection(self.name, self.version, "refusal.field", 1.0, field.strip())
            )
        text = output_text_of(span)
        verdict = refusal_verdict(text)
        if verdict is not None:
            label, evidence = verdict
            short = len(text.strip()) <= _SHORT_ANSWER_CHARS
            score = 0.6 if label == "partial" else 0.9 if short else 0.75
            found.append(Detection(self.name, self.version, f"refusal.{label}", score, evidence))
        return found


def refusal_verdict(text: str) -> tuple[str, str] | None:
    """``("phrase" | "partial", first refusal sentence)`` for ``text``, or None."""
    matches = _phrase_matches(text)
    if not matches:
        return None
    code = _code_spans(text)
    sentences: list[tuple[int, int]] = []
    for match in matches:
        start = match.start()
        if sentences and start < sentences[-1][1]:
            continue  # the same sentence again
        if _inside(code, start):
            continue
        sentence_start = _sentence_start(text, start)
        if _quoted(text, sentence_start, start):
            continue
        sentences.append((sentence_start, _sentence_end(text, match.end())))
    if not sentences:
        return None
    first = text[sentences[0][0] : sentences[0][1]].strip()
    partial = bool(code) or _help_weight(text, sentences) > _HELP_WEIGHT
    return ("partial" if partial else "phrase"), first


def _phrase_matches(text: str) -> list[re.Match[str]]:
    """Every refusal-phrase match, in order: each language's rules tried around its anchors."""
    lower = text.lower()
    phrases = PHRASES
    if len(lower) != len(text):  # a few characters lower-case to two; positions must agree
        lower, phrases = text, PHRASES_ANY_CASE
    # Blanks before the first word and for line breaks: every anchor word then follows a blank
    # (tabs, seldom before a word of prose, are left), and the one pattern can start with a
    # literal the engine looks for at C speed.
    ascii_only = text.isascii()
    anchors: dict[str, list[int]] = {}
    scan = WORD_ANCHOR_ASCII if ascii_only else WORD_ANCHOR
    for hit in scan.finditer(" " + lower.replace("\n", " ")):
        at = hit.start()  # the word's place in ``lower``: one blank put in front, one skipped
        lang, context = WORD_ANCHORS[hit.group(1)]
        if context is None or context.match(lower, at):
            anchors.setdefault(lang, []).append(at)
    if not ascii_only:
        for hit in CJK_ANCHOR.finditer(lower):
            anchors.setdefault(CJK_ANCHORS[hit.group()], []).append(hit.start())
    found: list[re.Match[str]] = []
    for lang, positions in anchors.items():
        pattern = phrases[lang]
        if lang in CJK_LANGUAGES:
            for lo, hi in _windows(sorted(positions), len(text)):
                found.extend(pattern.finditer(lower, lo, hi))
            continue
        covered = -1
        for at in sorted(positions):
            if at >= covered and (match := _match_before(lower, at, pattern)) is not None:
                found.append(match)
                covered = match.end()
    found.sort(key=lambda m: m.start())
    return found


def _match_before(lower: str, at: int, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """The earliest match that starts at a word at most ``REACH_CHARS`` before ``at`` and
    reaches past it: a handful of anchored attempts instead of a scan of the window."""
    for word in WORD_STARTS.finditer(lower, max(0, at - REACH_CHARS), at + 1):
        match = pattern.match(lower, word.start())
        if match is not None and match.end() > at:
            return match
    return None


def _windows(positions: list[int], size: int) -> list[tuple[int, int]]:
    """Where a match around each anchor can lie, overlapping windows joined: dense anchors
    make one scan of the text, never several, so the cost stays linear."""
    out: list[tuple[int, int]] = []
    for at in positions:
        lo, hi = max(0, at - REACH_CHARS), min(size, at + TAIL_CHARS)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _code_spans(text: str) -> list[tuple[int, int]]:
    if "```" not in text and "~~~" not in text:
        return []
    fences = [m.start() for m in _FENCE.finditer(text)]
    if len(fences) % 2:
        fences.append(len(text))  # an unclosed fence runs to the end
    return [(fences[i], fences[i + 1]) for i in range(0, len(fences), 2)]


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    return any(lo <= pos < hi for lo, hi in spans)


def _sentence_start(text: str, pos: int) -> int:
    lo = max(0, pos - _SENTENCE_MAX_CHARS)
    return max([text.rfind(c, lo, pos) for c in _TERMINATORS] + [lo - 1]) + 1


def _sentence_end(text: str, pos: int) -> int:
    end = _SENTENCE_END.search(text, pos, pos + _SENTENCE_MAX_CHARS)
    return end.end() if end else min(len(text), pos + _SENTENCE_MAX_CHARS)


def _quoted(text: str, sentence_start: int, pos: int) -> bool:
    """Whether the match at ``pos`` is inside a quotation, a block quote, or reported speech."""
    line_start = text.rfind("\n", 0, pos) + 1
    if text[line_start:pos].lstrip().startswith(">"):
        return True
    prefix = text[sentence_start:pos]
    if sum(c in _QUOTES for c in prefix) % 2:
        return True
    return _REPORTED.search(prefix) is not None


def _help_weight(text: str, sentences: list[tuple[int, int]]) -> int:
    weight, last = 0, 0
    for lo, hi in [*sentences, (len(text), len(text))]:
        rest = text[last:lo]
        weight += len(_SPACE.sub("", rest)) + 2 * len(_CJK.findall(rest))
        last = hi
    return weight

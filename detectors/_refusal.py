"""Refusals: the provider blocked the answer, or the model declined to give one.

* ``refusal.provider_block``: a content-filter or safety finish reason.
* ``refusal.field``: the provider's own refusal field is filled (OpenAI's ``message.refusal``).
* ``refusal.phrase``: the answer opens with refusal phrasing in one of eight languages.

Phrases are precision first: they must start one of the first sentences of the answer, and
they name the act of declining ("I can't help with", "no puedo ayudar"), not any apology or
"can't": "I'm sorry to hear that" and "I can't believe" are ordinary answers. A long answer
that opens with a refusal is often a partial one ("I can't browse, but here is what I know"),
so it scores lower than a short one.
"""

from __future__ import annotations

import re

from ._base import Detection, SpanText, finish_reasons_of, output_text_of
from ._finish_reasons import CONTENT_FILTER, first_of_kind

_APOS = "['’]"
_EN_NEG = (
    rf"(?:can{_APOS}?t|cannot|can\s+not|won{_APOS}t|will\s+not|"
    rf"(?:am|{_APOS}m)\s+(?:not\s+able|unable|not\s+going|not\s+allowed|not\s+permitted)\s+to|"
    rf"(?:won{_APOS}t|will\s+not)\s+be\s+able\s+to)"
)
_EN_VERB = (
    r"(?:help|assist|provide|comply|fulfil+|create|generate|write|produce|share|support|"
    r"engage|answer|give|offer|continue|complete|participate|do\s+(?:that|this)|"
    r"(?:go\s+)?along\s+with)"
)
# What follows "I'm sorry, but I can't" when it is not a refusal: idioms ("I can't believe")
# and limits of the moment ("I can't open the link"), which ask for help rather than decline.
_EN_IDIOM = (
    r"(?!\s+(?:believe|wait|stress|emphasi[sz]e|overstate|thank|help\s+but|tell\s+you\s+how|"
    r"find|see|open|access|read|view|locate|load|browse|reproduce|recall|remember|verify|"
    r"confirm|be\s+(?:sure|certain)|guarantee)\b)"
)
_EN_LEAD = r"(?:(?:however|but|unfortunately|as\s+an\s+ai(?:\s+(?:language\s+)?model)?)[,.]?\s+)?"

_PHRASES = [
    # English
    rf"(?:i{_APOS}m|i\s+am)\s+(?:really\s+|very\s+|so\s+)?(?:sorry|afraid)[,.]?\s+(?:but\s+)?"
    rf"i\s+{_EN_NEG}{_EN_IDIOM}",
    rf"(?:sorry|unfortunately|apologies|regrettably)[,.!]?\s+(?:but\s+)?i\s+{_EN_NEG}{_EN_IDIOM}",
    rf"{_EN_LEAD}i\s+{_EN_NEG}\s+(?:really\s+|directly\s+|in\s+good\s+conscience\s+)?"
    rf"{_EN_VERB}\b(?!\s+but\b)",
    r"i\s+(?:must|have\s+to|need\s+to)\s+(?:respectfully\s+|politely\s+)?decline",
    rf"(?:that{_APOS}s|this\s+is|that\s+is)\s+not\s+something\s+i\s+(?:can|am\s+able\s+to|will)"
    r"\s+(?:help|assist)",
    # Spanish
    r"(?:lo\s+siento(?:\s+mucho)?|lamentablemente|disculp[ae]|perd[oó]n)[,.]?\s+(?:pero\s+)?"
    r"no\s+(?:puedo|podr[eé]|me\s+es\s+posible)\b",
    r"no\s+(?:puedo|podr[eé])\s+(?:ayudar|asistir|proporcionar|cumplir|ofrecer|generar|crear|"
    r"facilitar|responder|hacer\s+eso)",
    # French
    r"(?:je\s+suis\s+(?:vraiment\s+)?d[ée]sol[ée]e?|d[ée]sol[ée]e?|malheureusement|je\s+regrette)"
    r"[,.]?\s+(?:mais\s+)?je\s+ne\s+(?:peux|pourrai|suis\s+pas\s+en\s+mesure)\b",
    r"je\s+ne\s+(?:peux|pourrai)\s+pas\s+(?:vous\s+|t['’]\s*)?(?:aider|assister|fournir|"
    r"r[ée]pondre|cr[ée]er|g[ée]n[ée]rer|donner|faire\s+cela)",
    r"je\s+ne\s+suis\s+pas\s+en\s+mesure\s+de\s+(?:vous\s+|t['’]\s*)?(?:aider|fournir|r[ée]pondre)",
    # German
    r"(?:es\s+tut\s+mir\s+(?:sehr\s+)?leid|entschuldigung|leider|bedauerlicherweise)[,.]?\s+"
    r"(?:aber\s+)?(?:ich\s+kann|kann\s+ich)\s+(?:\S+\s+){0,4}?nicht\s+(?:helfen|behilflich|"
    r"unterst[üu]tzen|beantworten|erf[üu]llen|bereitstellen|liefern|nachkommen|erstellen)",
    r"ich\s+kann\s+(?:\S+\s+){0,4}?nicht\s+(?:helfen|behilflich|nachkommen|erf[üu]llen)",
    r"ich\s+bin\s+(?:leider\s+)?nicht\s+in\s+der\s+lage",
    # Portuguese
    r"(?:desculpe|sinto\s+muito|lamento|infelizmente)[,.]?\s+(?:mas\s+)?n[ãa]o\s+"
    r"(?:posso|consigo|poderei)\b",
    r"n[ãa]o\s+posso\s+(?:ajudar|fornecer|atender|cumprir|responder)",
    # Italian
    r"(?:mi\s+dispiace|spiacente|purtroppo)[,.]?\s+(?:ma\s+)?non\s+(?:posso|sono\s+in\s+grado|riesco)\b",
    r"non\s+posso\s+(?:aiutar(?:ti|la|e)|fornire|assistere|rispondere)",
    # Chinese
    r"(?:很?抱歉|对不起|不好意思)[，,。！!]?\s*(?:但(?:是)?[，,]?\s*)?我(?:无法|不能|没办法|不可以)",
    r"我(?:无法|不能|没办法|不可以)(?:为你|为您|帮你|帮您|向你|向您)?(?:帮助|协助|提供|回答|满足|完成|"
    r"参与|处理|生成|创作|执行|做到|遵从)",
    # Japanese
    r"(?:申し訳(?:ありません|ございません|ない)(?:が|けど|けれど)?|すみません(?:が)?|恐れ入りますが)"
    r"[、,。]?\s*[^。！？\n]{0,40}?(?:できません|いたしかねます|致しかねます)",
    r"(?:その|この)?(?:ご?依頼|リクエスト|ご?質問|ご?要求)(?:には|に)(?:お応え|お答え|対応)"
    r"(?:することは|は)?できません",
    r"(?:お手伝い|お答え|ご提供|提供|対応)(?:することは|は)?できません",
]
_PHRASE = re.compile("|".join(f"(?:{p})" for p in _PHRASES), re.IGNORECASE)

# Where a sentence may start: after end punctuation or a line break.
_SENTENCE_END = re.compile(r"[.!?。！？\n]+[\s\"'”’)*_]*")
_LEADING_NOISE = re.compile(r"[\s>*_#\"'“”‘’`-]*")
_HEAD_CHARS = 300
_MAX_SENTENCES = 3
_SHORT_ANSWER_CHARS = 500


class RefusalDetector:
    """Find provider blocks, refusal fields and refusal phrasing in one answer.

    Reads the finish reason, the refusal field and the first 300 characters only: constant
    time whatever the answer's length. Safe to share between threads, never raises from
    ``detect``.
    """

    name = "refusal"
    version = "1.0"

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
        phrase = _refusal_phrase(text)
        if phrase is not None:
            score = 0.9 if len(text.strip()) <= _SHORT_ANSWER_CHARS else 0.6
            found.append(Detection(self.name, self.version, "refusal.phrase", score, phrase))
        return found


def _refusal_phrase(text: str) -> str | None:
    """The refusal sentence if one of the first sentences starts with refusal phrasing."""
    head = text[: _HEAD_CHARS + 200].lstrip()
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(head, 0, _HEAD_CHARS)]
    for start in starts[:_MAX_SENTENCES]:
        noise = _LEADING_NOISE.match(head, start)
        assert noise is not None  # the pattern matches the empty string, so it matches everywhere
        start = noise.end()
        match = _PHRASE.match(head, start)
        if match is not None:
            sentence_end = _SENTENCE_END.search(head, match.end())
            stop = sentence_end.end() if sentence_end else len(head)
            return head[start:stop].strip()
    return None

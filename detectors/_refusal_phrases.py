"""Refusal phrasing in twelve languages: en, de, fr, es, pt, it, zh, ja, ko, ru, ar, hi.

Each rule names the act of declining: a first-person "cannot / will not / would rather not"
with a verb of helping, providing or producing, or a set formula ("I must decline",
"控えさせていただきます"). Verbs of the moment ("I can't find the file", "I can't open the
link") ask for help rather than decline, and idioms ("I can't believe", "I can't help but",
"no puedo creer", "не могу не") are not refusals; both are kept out. Every repetition is
bounded, so one scan of any text is linear.
"""

from __future__ import annotations

import re

_APOS = "['’]"
_CANT = rf"(?:can{_APOS}?t|cannot|can\s+not|won{_APOS}t|will\s+not|(?:won{_APOS}t|will\s+not)\s+be\s+able\s+to)"
_IM = rf"(?:i{_APOS}m|i\s+am)"
_EN_VERB = (
    r"(?:help|assist|provide|comply|fulfil+|create|generate|write|produce|share|support|"
    r"engage|answer|give|offer|continue|complete|participate|disclose|reveal|draft|"
    r"do\s+(?:that|this|so)|(?:go\s+)?along\s+with|walk\s+(?:you\s+)?through)"
)
# What follows "I'm sorry, but I can't" when it is not a refusal: idioms and limits of the moment.
_EN_IDIOM = (
    r"(?!\s+(?:believe|wait|stress|emphasi[sz]e|overstate|thank|help\s+but|tell\s+you\s+how|"
    r"find|see|open|access|read|view|locate|load|browse|reproduce|recall|remember|verify|"
    r"confirm|be\s+(?:sure|certain)|guarantee|recommend)\b)"
)

_EN = [
    rf"(?:{_IM}|i{_APOS}m\s+really|i\s+am\s+really)\s+(?:really\s+|very\s+|so\s+)?(?:sorry|afraid)"
    rf"[,.]?\s+(?:but\s+)?i\s+{_CANT}{_EN_IDIOM}",
    rf"(?:sorry|unfortunately|apologies|regrettably)[,.!]?\s+(?:but\s+)?i\s+{_CANT}{_EN_IDIOM}",
    rf"i\s+{_CANT}\s+(?:really\s+|directly\s+|in\s+good\s+conscience\s+)?{_EN_VERB}\b(?!\s+but\b)",
    rf"{_IM}\s+(?:not\s+able|unable|not\s+going|not\s+allowed|not\s+permitted|not\s+willing)\s+to\s+"
    rf"(?:really\s+|directly\s+)?{_EN_VERB}\b",
    rf"{_IM}\s+not\s+(?:comfortable|willing)\s+(?:with\s+)?(?:help|assist|provid|writ|generat|creat|"
    r"shar|do|engag|answer|produc)\w*",
    rf"i(?:\s+(?:must|have\s+to|need\s+to|will\s+have\s+to|am\s+going\s+to\s+have\s+to)|"
    rf"{_APOS}m\s+going\s+to\s+have\s+to)\s+(?:respectfully\s+|politely\s+)?decline",
    rf"i(?:{_APOS}d|\s+would)\s+(?:prefer|rather)\s+not\s+(?:to\s+)?(?:help|assist|write|answer|provide|"
    r"share|discuss|generate|create|engage|respond|produce|comment|continue|do\s+(?:that|this))\b",
    rf"(?:that{_APOS}s|this\s+is|that\s+is|it{_APOS}s|it\s+is|this\s+isn{_APOS}t|that\s+isn{_APOS}t|"
    rf"this\s+is\s+not|that\s+is\s+not)\s+(?:not\s+)?something\s+i\s+(?:can|am\s+able\s+to|will|"
    rf"{_APOS}m\s+able\s+to|feel\s+comfortable)\s+(?:help|assist|do|provide|write)",
]
_ES = [
    r"(?:lo\s+siento(?:\s+mucho)?|lamentablemente|disculp[ae]|perd[oó]n)[,.]?\s+(?:pero\s+)?"
    r"no\s+(?:puedo|podr[eé]|me\s+es\s+posible)\b(?!\s+creer)",
    r"no\s+(?:puedo|podr[eé]|me\s+es\s+posible|voy\s+a)\s+(?:ayudar\w*|asistir\w*|proporcionar\w*|"
    r"cumplir|ofrecer|generar|crear|facilitar|responder|escribir|redactar|hacer\s+eso|contestar)",
    r"prefiero\s+no\s+(?:responder|ayudar|contestar|escribir|participar|hacerlo|opinar)",
]
_FR = [
    r"(?:je\s+suis\s+(?:vraiment\s+)?d[ée]sol[ée]e?|d[ée]sol[ée]e?|malheureusement|je\s+regrette)"
    r"[,.]?\s+(?:mais\s+)?je\s+ne\s+(?:peux|pourrai|suis\s+pas\s+en\s+mesure)\b(?!\s+pas\s+m['’]emp)",
    r"je\s+ne\s+(?:peux|pourrai|vais)\s+pas\s+(?:vous\s+|t['’]\s*)?(?:aider|assister|fournir|"
    r"r[ée]pondre|cr[ée]er|g[ée]n[ée]rer|donner|faire\s+(?:cela|ça)|r[ée]diger|[ée]crire|"
    r"acc[ée]der\s+[àa]\s+(?:cette|votre)\s+demande)",
    r"je\s+ne\s+suis\s+pas\s+en\s+mesure\s+de\s+(?:vous\s+|t['’]\s*)?(?:aider|fournir|r[ée]pondre|"
    r"donner|cr[ée]er|g[ée]n[ée]rer)",
    r"je\s+pr[ée]f[èe]re\s+ne\s+pas\s+(?:r[ée]pondre|aider|[ée]crire|participer|donner)",
]
_DE_VERB = (
    r"(?:(?:weiter)?helfen|behilflich|unterst[üu]tzen|beantworten|erf[üu]llen|bereitstellen|"
    r"liefern|nachkommen|erstellen|schreiben|geben|tun|machen|verfassen)"
)
_DE = [
    rf"(?:ich\s+kann|kann\s+ich)\s+(?:\S+\s+){{0,5}}?nicht\s+{_DE_VERB}\b",
    rf"ich\s+werde\s+(?:\S+\s+){{0,3}}?(?:nicht|keine\w*)\s+(?:\S+\s+){{0,3}}?{_DE_VERB}\b",
    rf"ich\s+m[öo]chte\s+(?:\S+\s+){{0,4}}?lieber\s+nicht\s+{_DE_VERB}\b",
    r"ich\s+bin\s+(?:leider\s+)?nicht\s+in\s+der\s+lage\b",
    r"ich\s+muss\s+(?:\S+\s+){0,3}?ablehnen\b",
]
_PT = [
    r"(?:desculpe|sinto\s+muito|lamento|infelizmente)[,.]?\s+(?:mas\s+)?n[ãa]o\s+"
    r"(?:posso|consigo|poderei)\b(?!\s+deixar)",
    r"n[ãa]o\s+(?:posso|consigo|poderei|vou)\s+(?:ajudar|fornecer|atender|cumprir|responder|gerar|"
    r"criar|escrever|redigir|fazer\s+isso)",
    r"prefiro\s+n[ãa]o\s+(?:responder|ajudar|escrever|participar|comentar)",
]
_IT = [
    r"(?:mi\s+dispiace|spiacente|purtroppo)[,.]?\s+(?:ma\s+)?non\s+(?:posso|sono\s+in\s+grado|riesco)\b"
    r"(?!\s+fare\s+a\s+meno)",
    r"non\s+(?:posso|riesco\s+a)\s+(?:aiutar\w*|fornire|assistere|rispondere|farlo|generare|creare|"
    r"scrivere|soddisfare)",
    r"non\s+sono\s+in\s+grado\s+di\s+(?:aiutar\w*|fornire|rispondere|soddisfare|generare|creare)",
    r"non\s+(?:scriver[òo]|ti\s+aiuter[òo]|la\s+aiuter[òo]|fornir[òo]|generer[òo]|creer[òo])\b",
    r"preferisco\s+non\s+(?:rispondere|aiutar\w*|scrivere|partecipare|commentare)",
]
_ZH = [
    r"(?:很?抱歉|对不起|不好意思)[，,。！!]?\s*(?:但(?:是)?[，,]?\s*)?我(?:无法|不能|没办法|不可以)",
    r"我(?:无法|不能|没办法|不可以|不会)(?:为你|为您|帮你|帮您|向你|向您)?(?:帮助|协助|帮|提供|回答|满足|完成|"
    r"参与|处理|生成|创作|执行|做到|遵从|编写|撰写|写)",
]
_JA = [
    r"(?:申し訳(?:ありません|ございません|ない)(?:が|けど|けれど)?|すみません(?:が)?|恐れ入りますが)"
    r"[、,。]?\s*[^。！？\n]{0,40}?(?:できません|いたしかねます|致しかねます)",
    r"(?:その|この)?(?:ご?依頼|リクエスト|ご?質問|ご?要求|ご要望)(?:には|に)(?:お応え|お答え|対応)"
    r"(?:することは|は)?(?:できません|いたしかねます|致しかねます|しかねます)",
    r"(?:お手伝い|お答え|お応え|ご提供|提供|対応|ご協力|協力|回答)(?:することは|は)?"
    r"(?:できません|いたしかねます|致しかねます|しかねます)",
    r"控えさせて(?:いただき|頂き)ます",
]
_KO = [
    r"(?:도와\s*드릴|도와줄|도울|도움을\s*드릴|제공해\s*드릴|제공할|답변(?:해)?\s*드릴|답변할|응할|생성할|"
    r"작성할|만들어\s*드릴)\s*수\s*(?:가\s*)?없",
    r"(?:도와|답변|제공해|안내해|도움|말씀)\s*드리기\s*(?:는\s*|가\s*)?어렵",
]
_RU = [
    r"не\s+(?:могу|смогу|буду|стану)\s+(?:\S+\s+){0,2}?(?:помо\w*|предостав\w*|выполн\w*|"
    r"писать|написать|созда\w*|генерир\w*|сгенерир\w*|отвеча\w*|ответить|дать|давать|участвовать|"
    r"поделиться|содейств\w*)",
    r"(?:вынужден\w*|должен|должна|приходится)\s+отказ\w*",
]
_AR = [
    r"(?:لا\s+(?:أستطيع|يمكنني|أقدر\s+على)|لن\s+(?:أتمكن\s+من|أستطيع))\s+(?:\S+\s+)?"
    r"(?:المساعدة|مساعدت\S*|تقديم|توفير|تلبية|إنشاء|كتابة|الإجابة|الرد|تنفيذ|القيام)",
]
_HI = [
    r"(?:मदद|सहायता|उत्तर|जवाब|प्रदान|साझा)\s+नहीं\s+(?:कर|दे)\s+"
    r"(?:सकता|सकती|सकते|पाऊँगा|पाऊंगा|पाऊँगी|पाऊंगी)",
    r"नहीं\s+(?:बना|लिख|बता)\s+(?:सकता|सकती|सकते|पाऊँगा|पाऊंगा|पाऊँगी|पाऊंगी)",
]

RULES: dict[str, list[str]] = {
    "en": _EN, "de": _DE, "fr": _FR, "es": _ES, "pt": _PT, "it": _IT,
    "zh": _ZH, "ja": _JA, "ko": _KO, "ru": _RU, "ar": _AR, "hi": _HI,
}
PHRASES = {lang: re.compile("|".join(f"(?:{p})" for p in rules)) for lang, rules in RULES.items()}
"""One pattern per language, for lower-cased text (case-insensitive matching costs several
times more), tried only where one of its anchors (below) is near."""
PHRASES_ANY_CASE = {lang: re.compile(p.pattern, re.IGNORECASE) for lang, p in PHRASES.items()}
"""The same, for the rare text whose lower-case form differs in length (so in positions)."""

# Every rule holds an anchor: a word of its language (below), or for Chinese, Japanese and
# Korean a few characters. A scan finds the anchors and tries the rules only around them:
# trying a pattern of dozens of alternatives at every position of the answer costs 0.1-0.7 µs
# per character, one pass of ``WORD_ANCHOR`` about 0.007. An anchor common in ordinary text
# ("not", "no", "non", "не") comes with a context that must match where it is found, so
# ordinary prose seldom reaches the rules.
_WORD_ANCHORS: dict[str, tuple[str, str | None]] = {
    # anchor word: (language, context matched at the anchor, or None)
    "can't": ("en", r"(?<=\bi )"), "can’t": ("en", r"(?<=\bi )"), "cannot": ("en", r"(?<=\bi )"),
    "won't": ("en", r"(?<=\bi )"), "won’t": ("en", r"(?<=\bi )"),
    "unable": ("en", r"(?<=i'm )|(?<=i’m )|(?<=i am )"),
    "declin": ("en", None),
    "prefer": ("en", r"(?<=i'd )|(?<=i’d )|(?<=i would )"),
    "rather": ("en", r"(?<=i'd )|(?<=i’d )|(?<=i would )"),
    "not ": ("en", r"(?<=\bi will )|not (?:able|going|allowed|permitted|willing|comfortable|something)"),
    "something": ("en", r"something i "),
    "no ": ("es", r"no (?:puedo|podr|me es|voy a)(?! creer)"),
    "prefiero": ("es", None),
    "je ": ("fr", r"je (?:ne|pr)"),
    "ich": ("de", r"ich\s"),
    "non ": ("it", r"non (?:posso|sono|riesco|scriv|ti |la |forni|gener|cree)"),
    "preferisco": ("it", None),
    "não": ("pt", r"não (?:posso|consigo|poderei|vou)"),
    "prefiro": ("pt", None),
    "не ": ("ru", r"не (?:могу|смогу|буду|стану)(?! не\b)"),
    "отказ": ("ru", None),
    "لا ": ("ar", r"لا (?:أستطيع|يمكنني|أقدر)"),
    "لن ": ("ar", r"لن (?:أتمكن|أستطيع)"),
    "नहीं": ("hi", None),
}


def _anchor_pattern(words: list[str]) -> re.Pattern[str]:
    # Longest first: "preferisco" is Italian before "prefer" is English. The look-ahead at the
    # anchors' first letters turns most blanks away in one step (a third of the cost on JSON).
    first_letters = "".join(sorted({word[0] for word in words}))
    return re.compile(f" (?=[{re.escape(first_letters)}])("
                      + "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)) + ")")


WORD_ANCHOR = _anchor_pattern(list(_WORD_ANCHORS))
"""An anchor word after a blank, in lower-cased text with a blank put in front."""
WORD_ANCHOR_ASCII = _anchor_pattern([word for word in _WORD_ANCHORS if word.isascii()])
"""The same for ASCII text, where the other anchors cannot be: 2.8 µs against 3.2 on 1 KB of prose."""
WORD_ANCHORS: dict[str, tuple[str, re.Pattern[str] | None]] = {
    word: (lang, None if context is None else re.compile(context))
    for word, (lang, context) in _WORD_ANCHORS.items()
}
_CJK_ANCHORS = {
    "zh": ("无法", "不能", "没办法", "不可以", "不会"),
    "ja": ("できません", "かねます", "控えさせ"),
    "ko": ("없", "어렵"),
}
CJK_ANCHORS = {anchor: lang for lang, anchors in _CJK_ANCHORS.items() for anchor in anchors}
"""Anchors of Chinese, Japanese and Korean, to their language."""
# One flat alternation: with groups the engine no longer skips to the anchors' first
# characters, and the scan costs 40 times more.
CJK_ANCHOR = re.compile("|".join(CJK_ANCHORS))
CJK_LANGUAGES = ("zh", "ja", "ko")

# How far before its anchor a rule may start: "I'm really very sorry, but I can't" starts 34
# characters before "can't"; Japanese allows 40 characters of object before "できません".
REACH_CHARS = 64
# How far after its anchor a match may end: the longest rule's tail, with room for lookaheads.
TAIL_CHARS = 160
WORD_STARTS = re.compile(r"\b\w")

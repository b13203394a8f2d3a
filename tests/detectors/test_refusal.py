from __future__ import annotations

import pytest

from infersight.detectors import RefusalDetector, SpanText

detector = RefusalDetector()


def labels(span: SpanText) -> list[str]:
    return [d.label for d in detector.detect(span)]


@pytest.mark.parametrize("reason", ["content_filter", "CONTENT_FILTER", "safety", "refusal"])
def test_content_filter_finish_reason_is_a_provider_block(reason):
    [found] = detector.detect(SpanText(output_text="", finish_reason=reason))
    assert found.label == "refusal.provider_block"
    assert found.evidence == f"finish_reason={reason.lower()}"


def test_a_filled_refusal_field_is_reported_with_its_text():
    [found] = detector.detect(
        SpanText(output_text="", refusal_field="I'm sorry, I cannot assist with that request.")
    )
    assert found.label == "refusal.field"
    assert found.evidence == "I'm sorry, I cannot assist with that request."


@pytest.mark.parametrize("field", [None, "", "   "])
def test_an_empty_refusal_field_is_not_a_refusal(field):
    assert labels(SpanText(output_text="Paris.", refusal_field=field)) == []


def test_signals_add_up():
    span = SpanText(
        output_text="I'm sorry, but I can't help with that.",
        finish_reason="content_filter",
        refusal_field="Blocked.",
    )
    assert labels(span) == ["refusal.provider_block", "refusal.field", "refusal.phrase"]


REFUSALS = [
    # English
    "I'm sorry, but I can't help with that.",
    "I’m sorry, but I can’t assist with that request.",
    "I cannot help with creating malware.",
    "Sorry, I can't do that.",
    "I understand why you're asking. However, I can't help with that.",
    "As an AI language model, I cannot provide medical diagnoses.",
    "I must respectfully decline this request.",
    "**I'm sorry, but I can't help with that.**",
    # Spanish
    "Lo siento, pero no puedo ayudarte con eso.",
    "No puedo ayudar con esa solicitud.",
    # French
    "Je suis désolé, mais je ne peux pas vous aider avec cette demande.",
    "Je ne peux pas fournir ce type d'informations.",
    # German
    "Es tut mir leid, aber ich kann Ihnen dabei nicht helfen.",
    "Leider kann ich Ihnen bei dieser Anfrage nicht helfen.",
    # Chinese
    "抱歉，我无法帮助你完成这个请求。",
    "我无法提供这方面的信息。",
    # Japanese
    "申し訳ありませんが、そのご依頼にはお応えできません。",
    "申し訳ございませんが、この内容についてはお手伝いできません。",
    # Portuguese, Italian
    "Desculpe, mas não posso ajudar com isso.",
    "Mi dispiace, ma non posso aiutarti con questa richiesta.",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusal_phrases(text):
    [found] = detector.detect(SpanText(output_text=text))
    assert found.label == "refusal.phrase"
    assert found.score == 0.9
    assert found.evidence.strip("*") in text


NOT_REFUSALS = [
    "I can't believe how easy this was! Here's the code you asked for.",
    "I'm sorry to hear that. Here's how to fix it: restart the router, then reset the DNS cache.",
    "I cannot stress enough how important backups are. Run them nightly.",
    "I can't help but notice that your loop never terminates; add a break.",
    "I'm sorry, but I can't find the file you mentioned. Could you paste it here?",
    "Sure! I can help with that. Here's a summary of the report.",
    "The function returns None when the key is missing, so you can't use it directly.",
    "It shows 'I cannot help with that' when the user lacks the role; grant it to fix this.",
    "No puedo creer lo fácil que fue. Aquí está el código.",
    "Lo siento mucho por tu pérdida. Aquí tienes algunas ideas para el homenaje.",
    "Je ne peux pas m'empêcher de remarquer que votre code est élégant.",
    "Leider ist die API gerade langsam; versuche es mit einem Retry.",
    "我无法确定具体日期，但大约是在1990年代初。",
    "申し訳ありませんが、少々お待ちください。確認します。",
]


@pytest.mark.parametrize("text", NOT_REFUSALS)
def test_ordinary_answers_are_not_refusals(text):
    assert labels(SpanText(output_text=text)) == []


def test_a_refusal_after_a_helpful_answer_is_a_partial_refusal():
    text = "Here is the migration plan you asked for. " * 10 + "I'm sorry, but I can't help with that."
    [found] = detector.detect(SpanText(output_text=text))
    assert (found.label, found.score, found.evidence) == (
        "refusal.partial", 0.6, "I'm sorry, but I can't help with that."
    )


def test_a_long_answer_opening_with_a_refusal_is_a_partial_refusal():
    text = "I can't provide legal advice, but here is how the statute is usually read. " + "x " * 400
    [found] = detector.detect(SpanText(output_text=text))
    assert found.label == "refusal.partial"
    assert found.score == 0.6


def test_a_refusal_after_code_is_partial_whatever_its_length():
    text = "```python\nprint('hi')\n```\nI won't help with the part that disables the licence check."
    [found] = detector.detect(SpanText(output_text=text))
    assert found.label == "refusal.partial"
    assert found.evidence == "I won't help with the part that disables the licence check."


@pytest.mark.parametrize("text", [
    "\"I'm sorry, but I can't help with that.\" is what users see when the filter fires.",
    "> I cannot help with that request.\n\nThat reply comes from the moderation layer.",
    "The bot replies: I can't help with that. Grant the role to fix it.",
    "```\nassert reply == \"I can't help with that.\"\n```\nThe test pins the refusal text.",
])
def test_a_quoted_or_cited_refusal_is_not_one(text):
    assert labels(SpanText(output_text=text)) == []


def test_the_whole_answer_is_read_in_linear_time():
    # A baseline measured in the same test: 64 times the text may cost at most 64 times as
    # much, with a generous margin, whatever the machine's speed.
    import time

    unit = "Я не могу не отметить, что это не так. I can't believe it. No puedo creer. "
    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            detector.detect(SpanText(output_text=text))
            best = min(best, time.perf_counter() - start)
        return best

    small, large = cost(unit * 64), cost(unit * 64 * 64)
    # 16x to spare for a busy machine (at a load of 8 it took 4.1x): quadratic work would be 64x.
    assert large < small * 64 * 16
    assert labels(SpanText(output_text=unit * 4096 + "Sorry, I can't do that.")) == ["refusal.partial"]

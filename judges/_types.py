"""The values that flow through judging: a message, a span as the judge sees it, a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

SCORE_MIN = 1
SCORE_MAX = 5

# Spans the judge client itself produces carry this route, so the sampler never judges the judge
# and dashboards can show the judge's own spend as one route.
JUDGE_ROUTE = "infersight.judge"
JUDGE_TENANT = "infersight"


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, reduced to its role and its text."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class SampledSpan:
    """One LLM span chosen for judging, with what the judge needs to see of it.

    Attributes:
        ts_ns: when the span started (Unix nanoseconds).
        service_version: the app version that produced the answer (``service.version``).
        sample_rate: the probability with which the sampler included this span (its inclusion
            rate before any budget cut); 1.0 for panel items. ``1 / sample_rate`` is its weight
            for unbiased averages over a stratified sample.
        flagged: a detector had flagged the span, so the flagged rate applied.
        messages: the input conversation (system, user, assistant and tool turns).
        answer: the text the model produced.
        expects_json: the app asked for JSON (the SDK's ``gen_ai.output.type=json``).
    """

    project: str
    ts_ns: int
    trace_id: str
    span_id: str
    tenant: str = ""
    route: str = ""
    service_version: str = ""
    model: str = ""
    sample_rate: float = 1.0
    flagged: bool = False
    messages: tuple[Message, ...] = field(default=())
    answer: str = ""
    expects_json: bool = False

    @property
    def context(self) -> tuple[str, ...]:
        """Retrieved context the model was given: the text of ``tool`` messages."""
        return tuple(m.content for m in self.messages if m.role == "tool" and m.content)

    @property
    def has_content(self) -> bool:
        return bool(self.answer.strip()) and any(m.role == "user" and m.content for m in self.messages)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's valid answer for one prompt.

    Attributes:
        score: on the fixed scale ``SCORE_MIN``..``SCORE_MAX`` (1 worst, 5 best).
        reason: the judge's one-line reason, whitespace collapsed.
        judge_model: the model that judged (scores are only comparable within one).
        latency_s: wall time of the judgement, retries and back-off included.
        attempts: HTTP requests it took (1 without retries).
        cost_usd: what the judgement cost, ``None`` when the judge model's price is unknown.
        cost_estimated: ``cost_usd`` is an upper bound, since the judge reported no token usage.
    """

    score: int
    reason: str
    judge_model: str
    latency_s: float = 0.0
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cost_estimated: bool = False

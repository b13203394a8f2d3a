"""The result type, the input type and the protocol every inline detector follows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._finish_reasons import FINISH_REASON_KINDS, LENGTH

EVIDENCE_MAX_CHARS = 200

# Kept for callers of the old name; the table in _finish_reasons is the one place.
LENGTH_FINISH_REASONS = frozenset(r for r, kind in FINISH_REASON_KINDS.items() if kind == LENGTH)


@dataclass(frozen=True, slots=True)
class Detection:
    """One soft failure found in one span.

    Attributes:
        detector: name of the detector that found it (``"repetition"``, ``"json"``, ...).
        version: that detector's version; rates are only comparable within one version.
        label: what was found, ``"<detector>.<kind>"`` (``"repetition.loop"``).
        score: how strong the finding is, in [0, 1]; 1.0 for rules that are simply met.
        evidence: a short excerpt that shows it, at most 200 characters.
    """

    detector: str
    version: str
    label: str
    score: float
    evidence: str

    def __post_init__(self) -> None:
        evidence = self.evidence if isinstance(self.evidence, str) else str(self.evidence)
        # Lone surrogates from a broken stream would make the store's UTF-8 encode fail later,
        # far from here; replace them while the excerpt is still small.
        evidence = evidence.encode("utf-8", "replace").decode("utf-8")
        if len(evidence) > EVIDENCE_MAX_CHARS:
            evidence = evidence[: EVIDENCE_MAX_CHARS - 1] + "…"
        object.__setattr__(self, "evidence", evidence)
        object.__setattr__(self, "score", min(1.0, max(0.0, float(self.score))))


@dataclass(frozen=True)
class SpanText:
    """What an inline detector sees of one LLM span.

    Attributes:
        output_text: the answer text the model produced.
        finish_reason: the provider's finish reason (``"stop"``, ``"length"``, ...).
        expect_json: the application asked for JSON (JSON mode, structured output, a tool call).
        json_schema: the JSON Schema the answer must satisfy, when there is one.
        refusal_field: the provider's own refusal text (OpenAI's ``message.refusal``), if any.
        finish_reasons: every choice's finish reason, when the answer had several choices
            (``gen_ai.response.finish_reasons``); read together with ``finish_reason``.
    """

    output_text: str
    finish_reason: str = ""
    expect_json: bool = False
    json_schema: dict[str, Any] | None = None
    refusal_field: str | None = None
    finish_reasons: Sequence[str] = ()


@runtime_checkable
class InlineDetector(Protocol):
    """A stateless check that runs on every LLM span as the collector stores it.

    Contract: ``detect`` must not raise on any input (empty, huge, malformed, lone surrogates)
    and must not block: no I/O, no locks, no network, bounded CPU (it looks at a bounded part
    of huge outputs). It keeps no state between calls, so one instance is safe to share
    between threads. It returns an empty list when it finds nothing; every ``Detection``
    carries the detector's ``name`` and ``version``.
    """

    name: str
    version: str

    def detect(self, span: SpanText) -> list[Detection]:
        """Return the soft failures found in ``span``, or an empty list."""
        ...


def output_text_of(span: SpanText) -> str:
    """The output text as a ``str``, whatever the caller actually put there."""
    text = span.output_text
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "replace")
    return ""


def finish_reason_of(span: SpanText) -> str:
    """The finish reason lower-cased, so provider spellings compare equal."""
    reason = span.finish_reason
    return reason.strip().lower() if isinstance(reason, str) else ""


def finish_reasons_of(span: SpanText) -> list[str]:
    """Every choice's finish reason, lower-cased, ``finish_reason`` first; blanks dropped."""
    reasons = [span.finish_reason]
    extra = span.finish_reasons
    if isinstance(extra, (list, tuple)):
        reasons.extend(extra)
    return [r.strip().lower() for r in reasons if isinstance(r, str) and r.strip()]


def check_param(owner: str, name: str, value: object, ok: bool, expected: str) -> None:
    """Raise the house-style message for a bad constructor parameter."""
    if not ok:
        raise ValueError(f"The {name!r} parameter of {owner} must be {expected}; got {value!r}.")


def positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0

"""The judges' exceptions, under the collector's root.

    InfersightError                     (infersight.collector)
    └── JudgeError                      anything the judging pipeline raises on purpose
        ├── RubricError                 a rubric file is malformed, unknown or fails to render
        │   └── RubricVersionError      its text changed without a version bump (content hash)
        ├── JudgeCallError              one judgement failed; ``kind`` says how
        │   ├── TransientJudgeError     timeout, connection failure, 429, 5xx: retried, then raised
        │   ├── JudgeRejected           any other 4xx: our request is wrong, never retried
        │   └── InvalidVerdict          the judge answered, but not with a valid verdict
        ├── CircuitOpen                 the breaker is open: the judge was not called at all
        └── PanelError                  unknown panel, duplicate id, or too few paired outputs
"""

from __future__ import annotations

from infersight.collector.errors import InfersightError


class JudgeError(InfersightError):
    """Root of every error the judges raise on purpose."""


class RubricError(JudgeError):
    pass


class RubricVersionError(RubricError):
    pass


class JudgeCallError(JudgeError):
    """One judgement failed. ``kind`` is the outcome recorded in ``judge_calls``."""

    kind = "error"

    def __init__(self, message: str, *, attempts: int = 1, status_code: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status_code = status_code


class TransientJudgeError(JudgeCallError):
    kind = "transient"


class JudgeRejected(JudgeCallError):
    kind = "rejected"


class InvalidVerdict(JudgeCallError):
    kind = "invalid_verdict"

    def __init__(self, message: str, *, attempts: int = 1, input_tokens: int = 0, output_tokens: int = 0,
                 cost_usd: float | None = None, cost_estimated: bool = False) -> None:
        super().__init__(message, attempts=attempts)
        # The judge did answer, so the call was paid for: the runner records the spend.
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cost_usd = cost_usd
        self.cost_estimated = cost_estimated


class CircuitOpen(JudgeError):
    pass


class PanelError(JudgeError):
    pass

"""What an alert is: a labelled, fingerprinted condition with a summary, numbers and a link."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime

ERROR_SPIKE = "ErrorRateSpike"
QUEUE_NOT_DRAINING = "QueueNotDraining"
QUEUE_SILENT = "QueueStoppedReporting"
COST_ANOMALY = "CostAnomaly"
KINDS = (ERROR_SPIKE, QUEUE_NOT_DRAINING, QUEUE_SILENT, COST_ANOMALY)

# What a rule says of one signal at one evaluation. BREACH fires (or keeps firing) the alert; HOLD
# keeps a firing alert but never starts one (the signal is off its usual level, not yet back:
# hysteresis, so an incident pages once); CLEAR lets a firing alert resolve. A signal a rule says
# nothing about has no data: its alert neither fires nor resolves, so silence never looks healthy.
BREACH = "breach"
HOLD = "hold"
CLEAR = "clear"


@dataclass(frozen=True, slots=True)
class Alert:
    """One active condition found by a rule at one evaluation.

    ``labels`` identify it (the fingerprint is their hash, as in Alertmanager); ``annotations``
    describe it; ``numbers`` are the measurements behind it; ``link`` is the dashboard path
    that explains it.
    """

    name: str
    labels: dict[str, str]
    summary: str
    since: datetime
    numbers: dict[str, float] = field(default_factory=dict)
    details: str = ""
    link: str = "/"
    severity: str = "page"

    @property
    def fingerprint(self) -> str:
        return fingerprint({"alertname": self.name, **self.labels})


def fingerprint(labels: dict[str, str]) -> str:
    """Stable 16-hex-digit id of a label set, independent of label order."""
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A rule's judgement of one signal: ``state`` (BREACH, HOLD or CLEAR) and the alert it is
    about (whose labels identify the signal; its text matters only when it fires)."""

    state: str
    alert: Alert

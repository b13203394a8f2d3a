"""Alerting for exactly three things: error-rate spikes, queues that do not drain, cost anomalies."""

from __future__ import annotations

from ._channels import AlertmanagerNotifier, Notifier, NotifierError, SlackNotifier, WebhookNotifier
from ._cost import CostRule
from ._error_rate import BUCKET_S, BUCKETS, ErrorRateRule, ServiceMemory, ServiceWindow
from ._evaluator import Evaluation, Evaluator, EvaluatorConfig, history
from ._model import BREACH, CLEAR, HOLD, Alert, Verdict
from ._queue import QueueRule

__all__ = [
    "Alert",
    "AlertmanagerNotifier",
    "BREACH",
    "BUCKETS",
    "BUCKET_S",
    "CLEAR",
    "CostRule",
    "ErrorRateRule",
    "Evaluation",
    "Evaluator",
    "EvaluatorConfig",
    "HOLD",
    "Notifier",
    "NotifierError",
    "QueueRule",
    "ServiceMemory",
    "ServiceWindow",
    "SlackNotifier",
    "Verdict",
    "WebhookNotifier",
    "history",
]

"""Alerting for exactly three things: error-rate spikes, queues that do not drain, cost anomalies."""

from __future__ import annotations

from ._channels import AlertmanagerNotifier, Notifier, NotifierError, SlackNotifier, WebhookNotifier
from ._cost import CostRule
from ._error_rate import ErrorRateRule
from ._evaluator import Evaluation, Evaluator, EvaluatorConfig, history
from ._model import Alert
from ._queue import QueueRule

__all__ = [
    "Alert",
    "AlertmanagerNotifier",
    "CostRule",
    "ErrorRateRule",
    "Evaluation",
    "Evaluator",
    "EvaluatorConfig",
    "Notifier",
    "NotifierError",
    "QueueRule",
    "SlackNotifier",
    "WebhookNotifier",
    "history",
]

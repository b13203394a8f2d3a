"""Alerting for exactly three things: error-rate spikes, queues that do not drain, cost anomalies.

:class:`AlertJob` is what the collector's scheduler runs every minute; ``router`` serves the
alerts' own data (``/digest``, ``/api/v1/digest``, ``/api/v1/alerts``) and is imported on first
use, so reading alert history or running ``infersight alerts`` does not load FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._channels import AlertmanagerNotifier, Notifier, NotifierError, SlackNotifier, WebhookNotifier
from ._cli import alerts_cli, channel_options
from ._cost import CostRule
from ._error_rate import BUCKET_S, BUCKETS, ErrorRateRule, ServiceMemory, ServiceWindow
from ._evaluator import Evaluation, Evaluator, EvaluatorConfig, history
from ._model import BREACH, CLEAR, HOLD, Alert, Verdict
from ._queue import QueueRule
from ._setup import AlertJob

if TYPE_CHECKING:
    from fastapi import APIRouter

    router: APIRouter

__all__ = [
    "Alert",
    "AlertJob",
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
    "alerts_cli",
    "channel_options",
    "history",
    "router",
]


def __getattr__(name: str) -> Any:
    if name == "router":
        from ._routes import router

        return router
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

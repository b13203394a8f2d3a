"""Alerting for exactly three things: error-rate spikes, queues that do not drain, cost anomalies.

:class:`AlertJob` is what the collector's scheduler runs every minute; ``router`` serves the
alerts' own data (``/api/v1/digest``, ``/api/v1/alerts``, silences and acknowledgements under
``/api/v1`` and Alertmanager's ``/api/v2`` paths, the Alerts page's forms) and is imported on
first use, so reading alert history or running ``infersight alerts`` does not load FastAPI.
Silences and acknowledgements mute notifications on every channel, never the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._channels import AlertmanagerNotifier, Notifier, NotifierError, SlackNotifier, WebhookNotifier
from ._cli import alerts_cli, channel_options
from ._cost import CostRule
from ._digest import Digest, build_digest
from ._error_rate import BUCKET_S, BUCKETS, ErrorRateRule, ServiceMemory, ServiceWindow
from ._evaluator import Evaluation, Evaluator, EvaluatorConfig, history
from ._marks import silencing
from ._model import BREACH, CLEAR, HOLD, Alert, Verdict
from ._queue import QueueRule
from ._setup import AlertJob
from ._silences import Ack, Matcher, Silence, parse_matcher

if TYPE_CHECKING:
    from fastapi import APIRouter

    router: APIRouter

__all__ = [
    "Ack",
    "Alert",
    "AlertJob",
    "AlertmanagerNotifier",
    "BREACH",
    "BUCKETS",
    "BUCKET_S",
    "CLEAR",
    "CostRule",
    "Digest",
    "ErrorRateRule",
    "Evaluation",
    "Evaluator",
    "EvaluatorConfig",
    "HOLD",
    "Matcher",
    "Notifier",
    "NotifierError",
    "QueueRule",
    "ServiceMemory",
    "ServiceWindow",
    "Silence",
    "SlackNotifier",
    "Verdict",
    "WebhookNotifier",
    "alerts_cli",
    "build_digest",
    "channel_options",
    "history",
    "parse_matcher",
    "router",
    "silencing",
]


def __getattr__(name: str) -> Any:
    if name == "router":
        from ._routes import router

        return router
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Build the evaluator and its channels from the collector's settings."""

from __future__ import annotations

from collections.abc import Callable

from infersight import sdk

from .._settings import Settings
from ..spool import Spool
from ..store import Store
from ._channels import AlertmanagerNotifier, Notifier, SlackNotifier, WebhookNotifier
from ._cost import CostRule
from ._error_rate import ErrorRateRule
from ._evaluator import Evaluator, EvaluatorConfig

COLLECTOR_PROJECT = "_collector"


def notifiers_from(settings: Settings) -> list[Notifier]:
    """One notifier per configured channel, linking to ``settings.external_url``."""
    out: list[Notifier] = []
    url = settings.external_url
    if settings.alertmanager_url:
        out.append(AlertmanagerNotifier(settings.alertmanager_url, external_url=url))
    if settings.alert_webhook_url:
        out.append(WebhookNotifier(settings.alert_webhook_url, external_url=url))
    if settings.slack_webhook_url:
        out.append(SlackNotifier(settings.slack_webhook_url, external_url=url))
    return out


def config_from(settings: Settings) -> EvaluatorConfig:
    """The rules' parameters that the collector's settings (and CLI flags) set."""
    return EvaluatorConfig(
        error_rule=ErrorRateRule(slo=settings.slo, burst_minutes=settings.outage_burst_minutes),
        cost_rule=CostRule(ratio=settings.cost_ratio, min_excess_share=settings.cost_min_excess_share,
                           min_excess_usd=settings.cost_min_excess_usd),
    )


def evaluator_from(settings: Settings, store: Store, spool: Spool) -> Evaluator:
    """The evaluator for ``settings``; the app's scheduler runs it every evaluation interval.

    The collector's own spool is watched like any application queue, under the project
    ``_collector``: a spool that stops draining means the store is down.
    """

    from infersight.detectors import ContextStuffingDetector, WindowedRunner  # the scientific stack: see AlertJob

    def spool_depth() -> tuple[float, float]:
        depth = spool.depth()
        return float(depth.rows), depth.oldest_age_s

    evaluator = Evaluator(
        store,
        notifiers_from(settings),
        config_from(settings),
        own_queue=(COLLECTOR_PROJECT, spool_depth),
        digest_hour_utc=settings.digest_hour_utc,
        # Excess input priced as the spans are: with the SDK's genai-prices rates.
        windowed=WindowedRunner(store, stuffing=ContextStuffingDetector(price=sdk.cost_usd)),
    )
    return evaluator


class AlertJob:
    """The scheduler's alert job: :meth:`setup` builds the evaluator and reads the rules' history
    half a minute after the collector starts; :meth:`run` evaluates, every minute from a minute
    after the start.

    Building it loads the windowed detectors' scientific stack (NumPy, SciPy, scikit-learn:
    ~1.7 s of imports), and the cost rule's history at 1,000 tenants takes seconds more; in the
    job's thread at start they delay neither the collector's readiness nor the first evaluation.
    """

    name = "alerts"
    """The job's name in the scheduler, which is also the name of its lease in the store."""

    def __init__(self, settings: Settings, store: Store, spool: Spool) -> None:
        self._build: Callable[[], Evaluator] = lambda: evaluator_from(settings, store, spool)
        self._evaluator: Evaluator | None = None

    def setup(self) -> None:
        self._evaluator = self._evaluator or self._build()
        self._evaluator.prepare()

    def run(self) -> object:
        self._evaluator = self._evaluator or self._build()  # a setup that failed is redone here
        return self._evaluator.run_once()

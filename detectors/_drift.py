"""Numeric drift: has the shape of this hour's traffic moved away from the reference week?

Per feature (log input tokens, log output tokens, latency, TTFT, cost per call) the detector
compares the current window with the reference window two ways:

* the **Wasserstein distance** between the two samples, divided by the reference's
  interquartile range: "how far, in units of the usual spread". Its threshold is calibrated by
  ``fit`` on reference-vs-reference splits: the reference is split at random many times, the
  distance between the parts is scaled by ``sqrt(n m / (n + m))`` (so one null distribution
  serves every pair of sample sizes), and the ``1 - alpha / k`` quantile of those distances
  (Bonferroni over the ``k`` features; read from a lognormal fitted to them, as a few hundred
  splits cannot show a 99.8th percentile directly) becomes the feature's threshold for the
  sizes at hand;
* the two-sample **Kolmogorov-Smirnov test**, whose p-value must also be below ``alpha / k``.

A feature has drifted when both say so and the distance is at least ``min_distance`` (a
practical floor: with tens of thousands of requests a side, a shift of a few percent of the
spread is statistically real and operationally irrelevant). The false-alarm rate for a
stationary stream is therefore at most ``alpha`` per evaluation. Each finding names the
feature, the direction and the medians (and 90th percentiles) before and after.

Both windows need ``min_samples`` requests (500 by default); with fewer the detector gives no
verdict and says so. Hour-of-day effects are not in the null (random splits assume exchangeable
requests); ``min_distance`` is what keeps ordinary daily rhythms from being reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ._base import Detection, check_param
from ._fitted import (
    check_fitted,
    check_non_negative,
    check_positive_int,
    check_probability,
    quantile,
)
from ._money_text import usd_text

FEATURES = ("input_tokens", "output_tokens", "duration_s", "ttft_s", "cost_usd")
LOG_FEATURES = ("input_tokens", "output_tokens")

_UNITS = {"input_tokens": "tokens", "output_tokens": "tokens", "duration_s": "s", "ttft_s": "s", "cost_usd": "USD"}
_CHUNK = 256  # resamples per vectorised block: 256 x 4000 float32 is 4 MB


@dataclass(frozen=True, slots=True)
class FeatureShift:
    """How one feature compares between the reference and the current window.

    Attributes:
        feature: the column (``"output_tokens"``); log features are compared as ``log1p``.
        n_reference, n_current: the values present on each side (missing ones are skipped).
        median_reference, median_current, p90_reference, p90_current: in the column's own units.
        distance: Wasserstein distance over the reference IQR (of the log for log features);
            NaN when there was no verdict.
        threshold: the distance above which the feature counts as moved, for these sample sizes.
        ks_statistic, ks_pvalue: the two-sample Kolmogorov-Smirnov test.
        drifted: True or False, or None when either side had too few values.
        direction: ``"up"``, ``"down"``, or ``"shape"`` when the spread changed more than the level.
    """

    feature: str
    n_reference: int
    n_current: int
    median_reference: float
    median_current: float
    p90_reference: float
    p90_current: float
    distance: float
    threshold: float
    ks_statistic: float
    ks_pvalue: float
    drifted: bool | None
    direction: str

    def describe(self) -> str:
        """One line: what moved, which way, by how much, and the evidence for it."""
        unit = _UNITS.get(self.feature, "")
        if self.drifted is None:
            return f"{self.feature}: no verdict, {self.n_reference:,} reference / {self.n_current:,} current values"
        change = ""
        if self.median_reference and math.isfinite(self.median_reference):
            change = f" ({(self.median_current / self.median_reference - 1) * 100:+.0f}%)"
        return (
            f"{self.feature} {self.direction}: median {_fmt(self.median_reference, unit)} → "
            f"{_fmt(self.median_current, unit)}{change}, p90 {_fmt(self.p90_reference, unit)} → "
            f"{_fmt(self.p90_current, unit)}; distance {self.distance:.2f} IQR (threshold "
            f"{self.threshold:.2f}), KS p={self.ks_pvalue:.1g}; n={self.n_reference:,}/{self.n_current:,}"
        )


@dataclass(frozen=True, slots=True)
class DriftReport:
    """The verdict of :meth:`NumericDriftDetector.detect` on one current window.

    Attributes:
        detector, version: who judged (``"drift.numeric"``).
        drifted: True when at least one feature moved, False when none did, None for no verdict.
        n_reference, n_current: requests on each side.
        reason: one sentence for humans: what moved, or why there is no verdict.
        features: every feature's comparison, the moved ones first, strongest first.
    """

    detector: str
    version: str
    drifted: bool | None
    n_reference: int
    n_current: int
    reason: str
    features: tuple[FeatureShift, ...] = ()

    @property
    def moved(self) -> tuple[FeatureShift, ...]:
        """The features that drifted, strongest first."""
        return tuple(f for f in self.features if f.drifted)

    def detections(self) -> list[Detection]:
        """One ``drift.numeric.<feature>`` detection per moved feature, evidence in its line.

        The score is ``1 - threshold / distance``: 0 on the threshold, towards 1 far beyond it.
        """
        return [
            Detection(self.detector, self.version, f"{self.detector}.{f.feature}",
                      1.0 - f.threshold / f.distance, f.describe())
            for f in self.moved
        ]


class NumericDriftDetector:
    """Drift of per-request numbers (tokens, latency, TTFT, cost) against a reference window.

    Keyword-only parameters:
        features: the columns to compare; missing ones give no verdict.
        log_features: the columns compared as ``log1p`` (token counts span orders of magnitude).
        min_samples: requests needed on each side (and values per feature) for a verdict.
        alpha: the false-alarm rate per evaluation, split over the features (Bonferroni).
        min_distance: the smallest distance, in reference IQRs, worth reporting.
        n_resamples: reference-vs-reference splits used to calibrate each threshold; a
            lognormal fitted to their distances gives the far quantile.
        max_calibration_samples: the reference values a split draws from (bounds fit time).
        random_state: seed of the splits; the same data and seed give the same thresholds.

    ``fit(reference)`` learns, per feature, ``scale_`` (the reference IQR), ``null_quantile_``
    (the calibrated scaled distance) and the reference values; ``score(current)`` returns the
    raw distance per feature; ``detect(current)`` compares each with its threshold for the
    sample sizes at hand and explains the result. Windows are mappings from column name to a
    sequence of numbers (a dict of lists, a DataFrame); ``None`` and NaN count as missing.

    CPU-bound, no I/O. ``fit`` mutates the instance; once fitted, ``score`` and ``detect`` only
    read it and are safe to call from several threads.
    """

    name = "drift.numeric"
    version = "1.0"
    reads = ("llm_spans.input_tokens", "llm_spans.output_tokens", "llm_spans.duration_s",
             "llm_spans.ttft_s", "llm_spans.cost_usd")

    def __init__(
        self,
        *,
        features: Sequence[str] = FEATURES,
        log_features: Sequence[str] = LOG_FEATURES,
        min_samples: int = 500,
        alpha: float = 0.01,
        min_distance: float = 0.1,
        n_resamples: int = 300,
        max_calibration_samples: int = 4000,
        random_state: int = 0,
    ) -> None:
        owner = type(self).__name__
        check_param(owner, "features", features,
                    _names(features) and len(set(features)) == len(features),
                    "a non-empty sequence of distinct column names")
        check_param(owner, "log_features", log_features,
                    isinstance(log_features, Sequence) and not isinstance(log_features, str)
                    and all(isinstance(n, str) for n in log_features),
                    "a sequence of column names")
        check_positive_int(owner, "min_samples", min_samples, minimum=10)
        check_probability(owner, "alpha", alpha)
        check_non_negative(owner, "min_distance", min_distance)
        check_positive_int(owner, "n_resamples", n_resamples, minimum=100)
        check_positive_int(owner, "max_calibration_samples", max_calibration_samples, minimum=100)
        check_param(owner, "random_state", random_state,
                    isinstance(random_state, int) and not isinstance(random_state, bool) and random_state >= 0,
                    "an int >= 0")
        self.features = features
        self.log_features = log_features
        self.min_samples = min_samples
        self.alpha = alpha
        self.min_distance = min_distance
        self.n_resamples = n_resamples
        self.max_calibration_samples = max_calibration_samples
        self.random_state = random_state

    # -- estimator API ---------------------------------------------------------------------------

    def fit(self, reference: Any) -> NumericDriftDetector:
        """Learn the reference window and calibrate every feature's threshold.

        Args:
            reference: column name -> values, one value per request.

        Returns:
            ``self``, with ``n_reference_``, ``scale_``, ``null_quantile_``,
            ``reference_values_`` (sorted, transformed) and ``raw_reference_`` set.
            Features with fewer than ``min_samples`` values get a NaN quantile (no verdict).
        """
        raw, n = _columns(reference, self.features)
        rng = np.random.default_rng(self.random_state)
        level = 1.0 - self.alpha / len(self.features)
        values, scale, quantile = {}, {}, {}
        for feature in self.features:
            v = np.sort(self._transform(feature, raw[feature]))
            values[feature] = v
            scale[feature] = _scale(v)
            if len(v) >= self.min_samples:
                null = _null_scaled_distances(
                    v, scale[feature], rng, self.n_resamples, self.max_calibration_samples
                )
                quantile[feature] = _tail_quantile(null, level)
            else:
                quantile[feature] = math.nan
        self.raw_reference_ = {f: np.sort(r[np.isfinite(r)]) for f, r in raw.items()}
        self.reference_values_ = values
        self.scale_ = scale
        self.null_quantile_ = quantile
        self.n_reference_ = n
        return self

    def score(self, current: Any) -> dict[str, float]:
        """The raw Wasserstein distance per feature, in reference IQRs (NaN without a verdict)."""
        check_fitted(self, "null_quantile_")
        raw, _ = _columns(current, self.features)
        out = {}
        for feature in self.features:
            cur = self._transform(feature, raw[feature])
            ref = self.reference_values_[feature]
            enough = len(cur) >= self.min_samples and len(ref) >= self.min_samples
            out[feature] = (
                float(stats.wasserstein_distance(ref, cur) / self.scale_[feature]) if enough else math.nan
            )
        return out

    def threshold(self, feature: str, n_current: int) -> float:
        """The distance above which ``feature`` counts as moved, for ``n_current`` values."""
        check_fitted(self, "null_quantile_")
        n_ref = len(self.reference_values_[feature])
        if not n_ref or not n_current:
            return math.nan
        calibrated = self.null_quantile_[feature] / math.sqrt(n_ref * n_current / (n_ref + n_current))
        return max(calibrated, self.min_distance)

    def detect(self, current: Any) -> DriftReport:
        """Compare ``current`` with the reference, feature by feature, and explain the verdict."""
        check_fitted(self, "null_quantile_")
        raw, n_cur = _columns(current, self.features)
        if self.n_reference_ < self.min_samples or n_cur < self.min_samples:
            short = " and ".join(f"{n:,} requests in the {side} window"
                                 for side, n in (("reference", self.n_reference_), ("current", n_cur))
                                 if n < self.min_samples)
            return DriftReport(self.name, self.version, None, self.n_reference_, n_cur,
                               f"no verdict: {short}, at least {self.min_samples:,} needed on each side")
        k = len(self.features)
        shifts = [self._compare(f, raw[f], k) for f in self.features]
        judged = [s for s in shifts if s.drifted is not None]
        shifts.sort(key=_strongest_first)
        moved = [s for s in shifts if s.drifted]
        if not judged:
            drifted, reason = None, "no verdict: no feature has enough values on both sides"
        elif moved:
            drifted, reason = True, "; ".join(s.describe() for s in moved)
        else:
            top = max(judged, key=lambda s: s.distance / s.threshold)
            drifted = False
            reason = (f"no feature moved beyond its threshold (closest: {top.feature} at "
                      f"{top.distance:.2f} IQR, threshold {top.threshold:.2f})")
        return DriftReport(self.name, self.version, drifted, self.n_reference_, n_cur, reason, tuple(shifts))

    # -- internals ---------------------------------------------------------------------------------

    def _transform(self, feature: str, raw: np.ndarray) -> np.ndarray:
        values: np.ndarray = raw[np.isfinite(raw)]
        if feature in self.log_features:
            values = np.log1p(values[values > -1])
        return values

    def _compare(self, feature: str, raw_current: np.ndarray, k: int) -> FeatureShift:
        cur = self._transform(feature, raw_current)
        ref = self.reference_values_[feature]
        raw_ref = self.raw_reference_[feature]
        raw_cur = np.sort(raw_current[np.isfinite(raw_current)])
        med = (quantile(raw_ref, 0.5), quantile(raw_cur, 0.5))
        p90 = (quantile(raw_ref, 0.9), quantile(raw_cur, 0.9))
        if len(cur) < self.min_samples or len(ref) < self.min_samples:
            return FeatureShift(feature, len(ref), len(cur), *med, *p90, math.nan, math.nan,
                                math.nan, math.nan, None, "")
        w = float(stats.wasserstein_distance(ref, cur))
        distance = w / self.scale_[feature]
        ks = stats.ks_2samp(ref, cur, method="asymp")
        threshold = self.threshold(feature, len(cur))
        drifted = bool(ks.pvalue < self.alpha / k and distance > threshold)
        shift = float(np.mean(cur) - np.mean(ref))
        direction = "shape" if abs(shift) < 0.5 * w else ("up" if shift > 0 else "down")
        return FeatureShift(feature, len(ref), len(cur), *med, *p90, distance, threshold,
                            float(ks.statistic), float(ks.pvalue), drifted, direction)


def _strongest_first(shift: FeatureShift) -> tuple[int, float]:
    if shift.drifted is None:
        return (2, 0.0)
    return (0 if shift.drifted else 1, -shift.distance / shift.threshold)


def _names(value: object) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 0
            and all(isinstance(n, str) and n for n in value))


def _columns(data: Any, features: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
    """Each feature as a float array (NaN for missing values) and the number of requests."""
    present = {}
    for feature in features:
        try:
            column = data[feature]
        except (KeyError, IndexError, TypeError):
            continue
        try:
            present[feature] = np.asarray(column, dtype=float).ravel()  # None becomes NaN
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The window's {feature!r} column must hold numbers; {exc}") from exc
    lengths = {len(a) for a in present.values()}
    if len(lengths) > 1:
        raise ValueError(f"The window's columns must have one value per request; got lengths {sorted(lengths)}.")
    n = lengths.pop() if lengths else 0
    return {f: present.get(f, np.full(n, math.nan)) for f in features}, n


def _scale(values: np.ndarray) -> float:
    """The reference IQR; the standard deviation when half the values are equal; else 1."""
    if len(values) < 2:
        return 1.0
    q1, q3 = np.quantile(values, [0.25, 0.75])
    if q3 > q1:
        return float(q3 - q1)
    sd = float(np.std(values))
    return sd if sd > 0 else 1.0


def _null_scaled_distances(
    values: np.ndarray, scale: float, rng: np.random.Generator, n_resamples: int, max_pool: int
) -> np.ndarray:
    """``sqrt(n m / (n + m)) * W1(A, B) / scale`` for random splits of ``values`` into A and B.

    Vectorised: with the pool sorted once, a split is a 0/1 mask over the sorted positions
    (each value lands in A with probability 1/3), and W1 is the sum over the gaps between
    consecutive values of |F_A - F_B| times the gap. With ``a`` the count of A at or below a
    gap and ``j`` the count of all values there, |F_A - F_B| = N / (m (N - m)) * |a - j m / N|.
    """
    pool = values if len(values) <= max_pool else np.sort(rng.choice(values, max_pool, replace=False))
    size = len(pool)
    gaps = np.diff(pool).astype(np.float32)
    below = np.arange(1, size, dtype=np.float32)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, _CHUNK):
        rows = min(_CHUNK, n_resamples - start)
        masks = rng.random((rows, size), dtype=np.float32) < np.float32(1 / 3)
        in_a = np.cumsum(masks, axis=1, dtype=np.float32)
        m = np.clip(in_a[:, -1], 1, size - 1).astype(np.float64)
        in_a = in_a[:, :-1]
        gap_weights = np.abs(in_a - below[None, :] * (m / size).astype(np.float32)[:, None])
        out[start:start + rows] = (gap_weights @ gaps) * np.sqrt(size / (m * (size - m))) / scale
    return out


def _tail_quantile(null: np.ndarray, level: float) -> float:
    """The ``level`` quantile of a lognormal fitted to ``null``.

    A few hundred resamples cannot estimate a 99.8th percentile directly (it would be about
    the largest value); the lognormal's tail matches the scaled distance's well and errs on the
    high side for discrete columns such as token counts, i.e. towards fewer false alarms.
    """
    positive = null[null > 0]
    if len(positive) < len(null) // 2:
        return float(np.quantile(null, level))
    logs = np.log(positive)
    return float(math.exp(logs.mean() + stats.norm.ppf(level) * logs.std()))


def _fmt(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit == "tokens":
        return f"{value:,.0f}"
    if unit == "USD":
        return usd_text(value)
    if unit == "s":
        return f"{value:.3g} s"
    return f"{value:.4g}"

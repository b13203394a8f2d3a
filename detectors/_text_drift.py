"""Text drift: can a classifier tell this hour's prompts (or outputs) from the reference week's?

A domain classifier: hash the words of every text (``HashingVectorizer``, binary, no digits, CJK
characters as single tokens), label reference 0 and current 1, and measure how well a logistic
regression separates them with out-of-fold predictions (stratified k-fold ROC AUC). Without
drift the AUC hovers around 0.5 (slightly below, for small samples: cross-validation is
pessimistic), with drift it climbs towards 1.

The threshold comes from the null distribution for the sample sizes at hand: the labels are
shuffled ``n_permutations`` times and the AUC recomputed each time; a normal fitted to those
AUCs (its spread floored at the Mann-Whitney standard error) gives the ``1 - alpha`` quantile.
A practical floor ``min_auc`` applies on top, and when the AUC does not even reach it the
permutations are skipped: a quiet hour costs one cross-validation.

Every finding names the terms that separate the windows: the logistic regression is refitted on
everything and its largest positive and negative coefficients are mapped back to words. Hashing
is not invertible, so the detector keeps the words seen in each window per hash bucket and shows
the most frequent one, with the share of texts containing it on each side.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import stats
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from ._base import Detection, check_param
from ._fitted import check_fitted, check_positive_int, check_probability, is_number

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# Words of two letters or more; digits never (ids and counters would only add noise); each CJK
# character alone, as those scripts put no spaces between words.
TOKEN_PATTERN = rf"(?u)[{_CJK}]|[^\W\d_{_CJK}]{{2,}}"
_EVIDENCE_TERMS = 3


@dataclass(frozen=True, slots=True)
class TermShift:
    """A word that separates the windows.

    Attributes:
        term: the word (the most frequent one in its hash bucket).
        weight: its logistic-regression coefficient; positive means "current".
        share_current, share_reference: the share of texts containing it in each window.
    """

    term: str
    weight: float
    share_current: float
    share_reference: float

    def describe(self) -> str:
        return f"{self.term} ({self.share_current:.0%} vs {self.share_reference:.0%})"


@dataclass(frozen=True, slots=True)
class TextDriftReport:
    """The verdict of :meth:`TextDriftDetector.detect` on one channel of one current window.

    Attributes:
        detector, version: who judged (``"drift.text"``).
        channel: what the texts are (``"prompts"``, ``"outputs"``).
        drifted: True, False, or None for no verdict (too few texts).
        auc: the out-of-fold ROC AUC of current against reference (NaN without a verdict).
        threshold: the AUC above which the windows count as different, for these sizes.
        n_reference, n_current: non-empty texts on each side (before capping at max_samples).
        reason: one sentence for humans.
        current_terms: words more typical of the current window, strongest first.
        reference_terms: words that became rarer, strongest first.
    """

    detector: str
    version: str
    channel: str
    drifted: bool | None
    auc: float
    threshold: float
    n_reference: int
    n_current: int
    reason: str
    current_terms: tuple[TermShift, ...] = ()
    reference_terms: tuple[TermShift, ...] = ()

    def detections(self) -> list[Detection]:
        """One ``drift.text.<channel>`` detection when the channel drifted, else none.

        The score is ``(auc - threshold) / (1 - threshold)``.
        """
        if not self.drifted:
            return []
        more = ", ".join(t.describe() for t in self.current_terms[:_EVIDENCE_TERMS])
        less = ", ".join(t.describe() for t in self.reference_terms[:_EVIDENCE_TERMS])
        evidence = (f"{self.channel} AUC {self.auc:.2f} > {self.threshold:.2f}"
                    f" (n={self.n_reference:,}/{self.n_current:,}); more: {more or '-'}; less: {less or '-'}")
        score = (self.auc - self.threshold) / (1.0 - self.threshold)
        return [Detection(self.detector, self.version, f"{self.detector}.{self.channel}", score, evidence)]


class TextDriftDetector:
    """Drift of prompt or output text against a reference window, by domain classification.

    Keyword-only parameters:
        min_samples: non-empty texts needed on each side for a verdict.
        max_samples: texts used per side at most (a seeded random subset): bounds the cost.
        max_chars: characters read per text (its beginning and end).
        n_features: hash buckets.
        n_splits: folds of the out-of-fold AUC.
        n_permutations: label shuffles that estimate the null distribution of the AUC.
        alpha: the false-alarm rate per evaluation.
        min_auc: the smallest AUC worth reporting, whatever the null says.
        C: inverse regularisation strength of the logistic regression.
        n_terms: separating words reported per side.
        random_state: seed of sampling, folds and permutations.

    ``fit(reference)`` keeps (a sample of) the reference texts and their hashed features;
    ``score(current)`` returns the raw out-of-fold AUC; ``detect(current)`` compares it with the
    null threshold for the sizes at hand and names the separating words. Texts are strings;
    empty ones and non-strings are skipped.

    CPU-bound (a cross-validation per call, plus the permutations when the AUC is high), no
    I/O. ``fit`` mutates the instance; once fitted, ``score`` and ``detect`` only read it.
    """

    name = "drift.text"
    version = "1.0"
    reads = ("otel_traces.SpanAttributes['gen_ai.input.messages']",
             "otel_traces.SpanAttributes['gen_ai.output.messages']")

    def __init__(
        self,
        *,
        min_samples: int = 500,
        max_samples: int = 1000,
        max_chars: int = 4000,
        n_features: int = 2**18,
        n_splits: int = 5,
        n_permutations: int = 20,
        alpha: float = 0.01,
        min_auc: float = 0.55,
        C: float = 1.0,
        n_terms: int = 5,
        random_state: int = 0,
    ) -> None:
        owner = type(self).__name__
        check_positive_int(owner, "min_samples", min_samples, minimum=10)
        check_positive_int(owner, "max_samples", max_samples, minimum=10)
        check_param(owner, "max_samples", max_samples, max_samples >= min_samples,
                    f"at least min_samples ({min_samples!r})")
        check_positive_int(owner, "max_chars", max_chars, minimum=10)
        check_positive_int(owner, "n_features", n_features, minimum=16)
        check_positive_int(owner, "n_splits", n_splits, minimum=2)
        check_positive_int(owner, "n_permutations", n_permutations, minimum=5)
        check_probability(owner, "alpha", alpha)
        check_param(owner, "min_auc", min_auc, is_number(min_auc) and 0.5 <= min_auc < 1,
                    "a number in [0.5, 1)")
        check_param(owner, "C", C, is_number(C) and C > 0, "a positive number")
        check_positive_int(owner, "n_terms", n_terms)
        check_param(owner, "random_state", random_state,
                    isinstance(random_state, int) and not isinstance(random_state, bool) and random_state >= 0,
                    "an int >= 0")
        self.min_samples = min_samples
        self.max_samples = max_samples
        self.max_chars = max_chars
        self.n_features = n_features
        self.n_splits = n_splits
        self.n_permutations = n_permutations
        self.alpha = alpha
        self.min_auc = min_auc
        self.C = C
        self.n_terms = n_terms
        self.random_state = random_state

    # -- estimator API -----------------------------------------------------------------------------

    def fit(self, reference: Iterable[Any]) -> TextDriftDetector:
        """Keep the reference texts (at most ``max_samples``) and hash them.

        Returns:
            ``self``, with ``n_reference_``, ``reference_texts_`` and ``X_reference_`` set.
        """
        texts = self._clean(reference)
        self.n_reference_ = len(texts)
        self.reference_texts_ = self._sample(texts, salt=0)
        self.X_reference_ = self._vectorizer().transform(self.reference_texts_)
        return self

    def score(self, current: Iterable[Any]) -> float:
        """The out-of-fold ROC AUC of ``current`` against the reference (NaN without a verdict)."""
        check_fitted(self, "X_reference_")
        texts = self._clean(current)
        if self.n_reference_ < self.min_samples or len(texts) < self.min_samples:
            return math.nan
        X, y = self._design(self._sample(texts, salt=1))
        return self._oof_auc(X, y)

    def detect(self, current: Iterable[Any], *, channel: str = "texts") -> TextDriftReport:
        """Test ``current`` against the reference and explain the verdict.

        Args:
            current: the current window's texts.
            channel: what they are, used in the label (``drift.text.<channel>``) and evidence.
        """
        check_fitted(self, "X_reference_")
        texts = self._clean(current)
        n_ref, n_cur = self.n_reference_, len(texts)

        def report(drifted: bool | None, auc: float, threshold: float, reason: str,
                   terms: tuple[tuple[TermShift, ...], tuple[TermShift, ...]] = ((), ())) -> TextDriftReport:
            return TextDriftReport(self.name, self.version, channel, drifted, auc, threshold,
                                   n_ref, n_cur, reason, *terms)

        if n_ref < self.min_samples or n_cur < self.min_samples:
            short = " and ".join(f"{n:,} {channel} with text in the {side} window"
                                 for side, n in (("reference", n_ref), ("current", n_cur))
                                 if n < self.min_samples)
            return report(None, math.nan, math.nan,
                          f"no verdict: {short}, at least {self.min_samples:,} needed on each side")
        sample = self._sample(texts, salt=1)
        X, y = self._design(sample)
        auc = self._oof_auc(X, y)
        if auc <= self.min_auc:
            return report(False, auc, self.min_auc,
                          f"{channel}: AUC {auc:.3f}, not above the floor {self.min_auc:.2f}")
        threshold = max(self._null_threshold(X, y), self.min_auc)
        if auc <= threshold:
            return report(False, auc, threshold,
                          f"{channel}: AUC {auc:.3f}, within the null (threshold {threshold:.3f})")
        terms = self._terms(X, y, sample)
        more = ", ".join(t.describe() for t in terms[0]) or "-"
        less = ", ".join(t.describe() for t in terms[1]) or "-"
        reason = (f"{channel}: AUC {auc:.3f} > threshold {threshold:.3f} "
                  f"(n={n_ref:,}/{n_cur:,}); more frequent now: {more}; less frequent now: {less}")
        return report(True, auc, threshold, reason, terms)

    # -- internals -----------------------------------------------------------------------------------

    def _vectorizer(self) -> HashingVectorizer:
        return HashingVectorizer(
            n_features=self.n_features, token_pattern=TOKEN_PATTERN, lowercase=True,
            binary=True, norm="l2", alternate_sign=False,
        )

    def _clean(self, texts: Iterable[Any]) -> list[str]:
        half = self.max_chars // 2
        out = []
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                continue
            out.append(text if len(text) <= self.max_chars else text[:half] + " " + text[-half:])
        return out

    def _sample(self, texts: list[str], salt: int) -> list[str]:
        if len(texts) <= self.max_samples:
            return texts
        rng = np.random.default_rng([self.random_state, salt])
        keep = np.sort(rng.choice(len(texts), self.max_samples, replace=False))
        return [texts[i] for i in keep]

    def _design(self, current: list[str]) -> tuple[sp.csr_matrix, np.ndarray]:
        X_current = self._vectorizer().transform(current)
        X = sp.vstack([self.X_reference_, X_current], format="csr")
        y = np.r_[np.zeros(self.X_reference_.shape[0], dtype=int), np.ones(X_current.shape[0], dtype=int)]
        return X, y

    def _classifier(self) -> LogisticRegression:
        # The dual liblinear solver is the fast one when features outnumber texts, as here.
        return LogisticRegression(C=self.C, solver="liblinear", dual=True, class_weight="balanced",
                                  max_iter=1000, random_state=self.random_state)

    def _oof_auc(self, X: sp.csr_matrix, y: np.ndarray) -> float:
        folds = StratifiedKFold(n_splits=self.n_splits, shuffle=True, random_state=self.random_state)
        scores = np.empty(len(y))
        for train, test in folds.split(np.zeros(len(y)), y):
            model = self._classifier().fit(X[train], y[train])
            scores[test] = model.decision_function(X[test])
        return float(roc_auc_score(y, scores))

    def _null_threshold(self, X: sp.csr_matrix, y: np.ndarray) -> float:
        rng = np.random.default_rng([self.random_state, 2])
        null = np.array([self._oof_auc(X, rng.permutation(y)) for _ in range(self.n_permutations)])
        n1, n0 = int(y.sum()), int(len(y) - y.sum())
        mann_whitney_se = math.sqrt((n0 + n1 + 1) / (12.0 * n0 * n1))
        spread = max(float(null.std(ddof=1)), mann_whitney_se)
        return float(null.mean() + stats.norm.ppf(1.0 - self.alpha) * spread)

    def _terms(self, X: sp.csr_matrix, y: np.ndarray,
               current: list[str]) -> tuple[tuple[TermShift, ...], tuple[TermShift, ...]]:
        coef = self._classifier().fit(X, y).coef_[0]
        present = (X > 0).astype(np.float64)
        share_cur = np.asarray(present[y == 1].mean(axis=0)).ravel()
        share_ref = np.asarray(present[y == 0].mean(axis=0)).ravel()
        words = self._bucket_words(list(self.reference_texts_) + current)
        order = np.argsort(-coef, kind="stable")

        def pick(indices: Iterable[int], more_now: bool) -> tuple[TermShift, ...]:
            out: list[TermShift] = []
            for i in indices:
                if len(out) == self.n_terms or (coef[i] <= 0 if more_now else coef[i] >= 0):
                    break
                if i in words and (share_cur[i] > share_ref[i]) == more_now:
                    out.append(TermShift(words[i], float(coef[i]), float(share_cur[i]), float(share_ref[i])))
            return tuple(out)

        return pick(order, True), pick(order[::-1], False)

    def _bucket_words(self, texts: list[str]) -> dict[int, str]:
        """The most frequent word of each hash bucket seen in ``texts``."""
        vectorizer = self._vectorizer()
        analyze = vectorizer.build_analyzer()
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(set(analyze(text)))
        if not counts:
            return {}
        words = sorted(counts, key=lambda w: (-counts[w], w))
        hashed = vectorizer.transform(words)  # one word per row: its bucket is the row's column
        out: dict[int, str] = {}
        for row, word in enumerate(words):
            start, end = hashed.indptr[row], hashed.indptr[row + 1]
            if end > start:
                out.setdefault(int(hashed.indices[start]), word)
        return out


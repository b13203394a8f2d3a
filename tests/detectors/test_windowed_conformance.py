"""One suite over every windowed detector: the estimator conventions of the house style."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

from infersight.detectors import (
    ContextStuffingDetector,
    CostLoopDetector,
    LLMCall,
    NotFittedError,
    NumericDriftDetector,
    TextDriftDetector,
)

from .corpora import TEXT_BASE, numeric_window, text_corpus

DETECTORS = [NumericDriftDetector, TextDriftDetector, ContextStuffingDetector, CostLoopDetector]
FITTED = [NumericDriftDetector, TextDriftDetector, ContextStuffingDetector]
params = pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
fitted_params = pytest.mark.parametrize("cls", FITTED, ids=lambda c: c.__name__)


def reference_for(cls: type) -> object:
    rng = np.random.default_rng(0)
    if cls is NumericDriftDetector:
        return numeric_window(rng, 600)
    if cls is TextDriftDetector:
        return text_corpus(rng, 600, TEXT_BASE)
    return rng.lognormal(6, 0.5, 600)


def current_for(cls: type) -> object:
    rng = np.random.default_rng(1)
    if cls is NumericDriftDetector:
        return numeric_window(rng, 600, output_scale=2.0)
    if cls is TextDriftDetector:
        return text_corpus(rng, 600, {"billing": 1.0})
    return [LLMCall(ts_ns=i, trace_id="t", span_id=str(i), prompt_hash="p", input_tokens=t)
            for i, t in enumerate([400, 500, 90_000, 600, 700])]


@params
def test_has_a_name_a_version_and_declares_what_it_reads(cls):
    assert isinstance(cls.name, str) and cls.name
    assert isinstance(cls.version, str) and cls.version
    assert isinstance(cls.reads, tuple) and cls.reads


@params
def test_constructor_is_keyword_only_and_stores_its_parameters_unchanged(cls):
    signature = inspect.signature(cls)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in signature.parameters.values())
    with pytest.raises(TypeError):
        cls(1)
    detector = cls()
    for name, parameter in signature.parameters.items():
        assert getattr(detector, name) == parameter.default
    assert not [a for a in vars(detector) if a.endswith("_")], "no learned attributes before fit"


@params
def test_bad_parameters_fail_early_with_the_house_message(cls):
    for name, parameter in inspect.signature(cls).parameters.items():
        bad = {int: -5, float: -5.0}.get(type(parameter.default), "nonsense")
        if isinstance(parameter.default, bool):
            continue
        with pytest.raises(ValueError, match=rf"^The '{name}' parameter of {cls.__name__} must be .+; got "):
            cls(**{name: bad})


@fitted_params
def test_fit_returns_self_and_learns_trailing_underscore_attributes(cls):
    detector = cls()
    assert detector.fit(reference_for(cls)) is detector
    learned = [a for a in vars(detector) if a.endswith("_")]
    assert learned
    assert all(not a.startswith("_") for a in learned)


@fitted_params
def test_unfitted_use_raises_not_fitted_error(cls):
    detector = cls()
    for method in ("score", "detect"):
        with pytest.raises(NotFittedError, match=f"This {cls.__name__} is not fitted yet"):
            getattr(detector, method)(current_for(cls))
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


@params
def test_detections_follow_the_detection_contract(cls):
    detector = cls()
    if cls in FITTED:
        detector.fit(reference_for(cls))
    if cls is CostLoopDetector:
        found = [f.detection for f in detector.detect(current_for(cls))]
    else:
        result = detector.detect(current_for(cls))
        found = result.detections() if hasattr(result, "detections") else [f.detection for f in result]
    assert found, f"{cls.__name__} found nothing in its positive example"
    for d in found:
        assert d.detector == cls.name and d.version == cls.version
        assert d.label.startswith(f"{cls.name}.")
        assert 0.0 <= d.score <= 1.0
        assert len(d.evidence) <= 200


def test_importing_the_package_loads_no_numerical_library():
    # The SDK's stream guard imports infersight.detectors where numpy/scikit-learn are absent.
    code = "import sys, infersight.detectors; print(sorted({'numpy', 'scipy', 'sklearn'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

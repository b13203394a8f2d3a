"""What ``infersight demo`` runs beside the product: a synthetic app, a fake model and a fake judge.

None of it is part of the product. The fakes are local HTTP servers speaking the providers'
protocols, so the demo (and the tests) drive the real ``openai`` and ``anthropic`` clients, the
real SDK and the real judge client against them:

    from infersight.demo import FakeLLM, run_traffic

    llm = FakeLLM(error_rate=0.03).start()
    run_traffic(llm.url, seconds=10)   # needs infersight.sdk.init(...) first to send anything
    llm.stop()

This package uses only the SDK (the synthetic app is an SDK user like any other), so the
collector's ``infersight demo`` command can import it without a cycle.
"""

from __future__ import annotations

from ._app import run_traffic, start_fake_llm
from ._fake_judge import FakeJudge
from ._fake_llm import FakeLLM

__all__ = ["FakeJudge", "FakeLLM", "run_traffic", "start_fake_llm"]

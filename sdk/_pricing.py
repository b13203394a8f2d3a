"""Cost of a call in USD from genai-prices, with the per-model price lookup memoised.

genai-prices resolves a model in ~175 µs and prices a usage in ~130 µs (Decimal arithmetic and
a unit registry). Both are far too slow for a decorator that must cost microseconds, so the
model's per-million-token rates are looked up once per (provider, model) and applied here in
float arithmetic. The tier rule is genai-prices' own: once total input tokens exceed a tier's
start, every token of that kind is priced at the tier's rate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

_PRICE_KEYS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")


@dataclass(frozen=True, slots=True)
class _Rate:
    """One price per million tokens, with optional tiers [(start_tokens, price), ...] ascending."""

    base: float
    tiers: tuple[tuple[int, float], ...] = ()

    def at(self, total_input_tokens: int) -> float:
        if not self.tiers:  # most models: no reversed() iterator for an empty tuple, four times a call
            return self.base
        for start, price in reversed(self.tiers):
            if total_input_tokens > start:
                return price
        return self.base


@dataclass(frozen=True, slots=True)
class ModelRates:
    """The per-million-token rates of one model at one provider."""

    input: _Rate
    output: _Rate
    cache_read: _Rate | None
    cache_write: _Rate | None
    source: str

    def cost_usd(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """Price one call. ``input_tokens`` includes the cached ones, as genai-prices counts them."""
        cache_read = self.cache_read or self.input
        cache_write = self.cache_write or self.input
        uncached = max(input_tokens - cache_read_tokens - cache_write_tokens, 0)
        total = (
            uncached * self.input.at(input_tokens)
            + cache_read_tokens * cache_read.at(input_tokens)
            + cache_write_tokens * cache_write.at(input_tokens)
            + output_tokens * self.output.at(input_tokens)
        )
        return total / 1_000_000


def _rate(value: Any) -> _Rate | None:
    if value is None:
        return None
    tiers = getattr(value, "tiers", None)
    if tiers is not None:
        return _Rate(float(value.base), tuple((int(t.start), float(t.price)) for t in tiers))
    return _Rate(float(value))


def rates_from_mapping(prices: dict[str, float], source: str = "override") -> ModelRates:
    """Rates from a user's table: ``{"input_mtok": 0.2, "output_mtok": 0.6, ...}``."""
    return ModelRates(
        input=_Rate(float(prices["input_mtok"])),
        output=_Rate(float(prices["output_mtok"])),
        cache_read=_rate(prices.get("cache_read_mtok")),
        cache_write=_rate(prices.get("cache_write_mtok")),
        source=source,
    )


@functools.lru_cache(maxsize=1024)
def lookup_rates(provider: str | None, model: str) -> ModelRates | None:
    """The model's rates from genai-prices' bundled data, or ``None`` when it is unknown.

    Memoised: the first call for a model costs a few hundred microseconds, later ones a dict hit.
    """
    from genai_prices import Usage, calc_price

    try:
        calc = calc_price(Usage(input_tokens=1, output_tokens=1), model, provider_id=provider)
    except LookupError:
        if provider is None:
            return None
        # Provider names on spans ("azure.ai.openai", "aws.bedrock") often differ from
        # genai-prices' ids; the model id alone usually still identifies the price.
        return lookup_rates(None, model)
    price = calc.model_price
    known = {k: getattr(price, k, None) for k in _PRICE_KEYS}
    input_rate, output_rate = _rate(known["input_mtok"]), _rate(known["output_mtok"])
    if input_rate is None or output_rate is None:
        return None
    return ModelRates(
        input=input_rate,
        output=output_rate,
        cache_read=_rate(known["cache_read_mtok"]),
        cache_write=_rate(known["cache_write_mtok"]),
        source=f"genai-prices:{calc.provider.id}/{calc.model.id}",
    )


def priceable(input_tokens: int | None) -> bool:
    """Whether a call with this input count can be priced at all.

    A call's input is most of its price (a prompt is usually several times its answer), so a
    call whose input count is unknown has an unknown cost: pricing only its output gave ~40% of
    the true cost as if it were known. An unknown output count is priced as none (embeddings
    have no output), and a call is marked when its counts are the SDK's estimates.
    """
    return input_tokens is not None


def cost_usd(
    model: str,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
    provider: str | None = None,
) -> tuple[float, str] | None:
    """The USD cost of one call and where the price came from, or ``None`` for an unknown model
    or an unknown input count (:func:`priceable`).

    ``input_tokens`` includes cached input, as the GenAI conventions count it. Overrides given
    to ``init(prices=...)`` win over genai-prices. Cheap after the first call per model.
    """
    from ._setup import price_override

    if input_tokens is None:
        return None
    output_tokens = output_tokens or 0
    rates = price_override(model) or lookup_rates(provider, model)
    if rates is None:
        return None
    return rates.cost_usd(input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens), rates.source

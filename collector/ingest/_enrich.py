"""Cost for spans that arrive with tokens and a model but no cost (other instrumentations).

The same genai-prices rates the SDK uses, looked up once per model. The result is written as
``infersight.cost.usd`` with ``infersight.cost.source`` saying the collector computed it; a span
whose model is unknown gets no cost, never a guess.
"""

from __future__ import annotations

from infersight.sdk import cost_usd, semconv

# Canonical names only: the normaliser (._normalize) has already copied every other vocabulary's.
_MODEL_KEYS = (semconv.RESPONSE_MODEL, semconv.REQUEST_MODEL)
_PROVIDER_KEYS = (semconv.PROVIDER,)
_INPUT_KEYS = (semconv.INPUT_TOKENS,)
_OUTPUT_KEYS = (semconv.OUTPUT_TOKENS,)
_CACHE_READ_KEYS = (semconv.CACHE_READ_TOKENS,)
_CACHE_WRITE_KEYS = (semconv.CACHE_CREATION_TOKENS,)


def _first(attrs: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value:
            return value
    return None


def _tokens(attrs: dict[str, str], keys: tuple[str, ...]) -> int | None:
    value = _first(attrs, keys)
    if value is None:
        return None
    try:
        return max(int(value), 0)
    except ValueError:
        return None


def add_cost(attrs: dict[str, str]) -> None:
    """Set ``infersight.cost.usd`` on span attributes that have tokens and a priced model."""
    if semconv.COST_USD in attrs:
        return
    input_tokens, output_tokens = _tokens(attrs, _INPUT_KEYS), _tokens(attrs, _OUTPUT_KEYS)
    if input_tokens is None and output_tokens is None:
        return
    model = _first(attrs, _MODEL_KEYS)
    if model is None:
        return
    if input_tokens is None:  # unpriced, never the price of its output alone (sdk.cost_usd)
        return
    priced = cost_usd(
        model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=_tokens(attrs, _CACHE_READ_KEYS) or 0,
        cache_creation_tokens=_tokens(attrs, _CACHE_WRITE_KEYS) or 0,
        provider=_first(attrs, _PROVIDER_KEYS),
    )
    if priced is None:
        attrs[semconv.COST_UNKNOWN_MODEL] = "true"
        return
    attrs[semconv.COST_USD] = repr(priced[0])
    attrs[semconv.COST_SOURCE] = "collector:" + priced[1]

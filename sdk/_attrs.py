"""Span attribute names: OpenTelemetry GenAI semantic conventions first, ``infersight.*`` for the rest.

The collector's materialized view reads exactly these names, so they are the wire contract
between the two halves of the product.
"""

from __future__ import annotations

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
DATA_SOURCE = "gen_ai.data_source.id"
TOP_K = "gen_ai.request.top_k"
ERROR_TYPE = "error.type"

TENANT = "infersight.tenant.id"
USER = "infersight.user.id"
ROUTE = "infersight.route"
COST_USD = "infersight.cost.usd"
COST_SOURCE = "infersight.cost.source"
COST_UNKNOWN_MODEL = "infersight.cost.unknown_model"
ERROR_CLASS = "infersight.error.class"
RETRIEVAL_RETURNED = "infersight.retrieval.returned"
RERANK_CANDIDATES = "infersight.rerank.candidates"
RERANK_RETURNED = "infersight.rerank.returned"

"""What kind of work a typed span is: the one definition every reader of ``llm_spans`` shares.

A span's ``kind`` is decided once, at ingest, from its operation (which the view has already
mapped from GenAI semconv, OpenInference span kinds and OpenLLMetry request types):

    llm        a model call (chat, text completion, generate_content): the unit of calls, error
               rate, latency, TTFT, tokens and cost on every surface
    embedding  an embeddings call
    retrieval  a vector or keyword search
    rerank     a reranker call
    tool       a tool execution
    agent      an agent or workflow step
    other      any other GenAI operation

The column's SQL default and the view's list of LLM operations are generated from
:data:`OPERATION_KINDS` (see ``sql/002_llm_spans.sql``), Python readers use the same table, and
a test pins the SDK's copy (the SDK cannot import the collector), so none can disagree.
"""

from __future__ import annotations

from collections.abc import Mapping

from infersight.sdk import semconv

LLM = "llm"
EMBEDDING = "embedding"
RETRIEVAL = "retrieval"
RERANK = "rerank"
TOOL = "tool"
AGENT = "agent"
OTHER = "other"
KINDS = (LLM, EMBEDDING, RETRIEVAL, RERANK, TOOL, AGENT, OTHER)

OPERATION_KINDS: dict[str, str] = {
    "chat": LLM,
    "text_completion": LLM,
    "completion": LLM,  # OpenLLMetry's llm.request.type
    "generate_content": LLM,
    "embeddings": EMBEDDING,
    "embedding": EMBEDDING,  # OpenLLMetry
    "retrieval": RETRIEVAL,
    "rerank": RERANK,
    "execute_tool": TOOL,
    "create_agent": AGENT,
    "invoke_agent": AGENT,
}


# OpenInference has span kinds, not operations: the LLM call, retrieval, rerank and embedding
# kinds name the same work as these operations (the view and the ingest normaliser both read this).
OPENINFERENCE_OPERATIONS: dict[str, str] = {
    "LLM": "chat",
    "RETRIEVER": "retrieval",
    "RERANKER": "rerank",
    "EMBEDDING": "embeddings",
}


def operation_of(attributes: Mapping[str, str]) -> str:
    """The ``llm_spans.operation`` of a span with these attributes, as the view computes it:
    GenAI's ``gen_ai.operation.name``, else the OpenInference span kind, else OpenLLMetry's
    ``llm.request.type``; ``""`` for a span that is no GenAI work."""
    return (
        attributes.get(semconv.OPERATION)
        or OPENINFERENCE_OPERATIONS.get(attributes.get(semconv.OPENINFERENCE_SPAN_KIND, ""))
        or attributes.get(semconv.OPENLLMETRY_REQUEST_TYPE)
        or ""
    )


def openinference_operation_sql(span_kind: str) -> str:
    """The OpenInference part of :func:`operation_of` as a ClickHouse expression (``NULL`` for other kinds)."""
    cases = ", ".join(f"{span_kind} = '{kind}', '{op}'" for kind, op in OPENINFERENCE_OPERATIONS.items())
    return f"multiIf({cases}, NULL)"


def kind_of(operation: str) -> str:
    """The kind of a span with this ``llm_spans.operation``."""
    return OPERATION_KINDS.get(operation, OTHER)


def operations_of(kind: str) -> tuple[str, ...]:
    """Every operation of ``kind``, sorted (for filters on tables keyed by operation)."""
    return tuple(sorted(op for op, k in OPERATION_KINDS.items() if k == kind))


def operations_sql(kind: str) -> str:
    """:func:`operations_of` as a ClickHouse tuple literal, for ``operation IN ...`` in DDL."""
    return "(" + ", ".join(f"'{op}'" for op in operations_of(kind)) + ")"


def kind_sql(operation: str = "operation") -> str:
    """:func:`kind_of` as a ClickHouse expression over the column ``operation``."""
    cases = ", ".join(f"{operation} = '{op}', '{kind}'" for op, kind in OPERATION_KINDS.items())
    return f"multiIf({cases}, '{OTHER}')"

-- One typed row per GenAI span: what dashboards, detectors and alerts read. `kind` says what the span
-- is (llm, embedding, retrieval, rerank, tool, agent, other): its default is generated from the one
-- definition in store/_kinds.py, and only `kind = 'llm'` rows are model calls.
CREATE TABLE IF NOT EXISTS llm_spans (
    project LowCardinality(String),
    ts DateTime64(9),
    trace_id String,
    span_id String,
    parent_span_id String,
    service LowCardinality(String),
    service_version LowCardinality(String),
    operation LowCardinality(String),
    kind LowCardinality(String) DEFAULT $KIND_OF_OPERATION,
    tenant LowCardinality(String),
    user_id String,
    session_id String,
    route LowCardinality(String),
    provider LowCardinality(String),
    request_model LowCardinality(String),
    model LowCardinality(String),
    input_tokens Nullable(UInt64),
    output_tokens Nullable(UInt64),
    cache_read_tokens UInt64,
    cache_creation_tokens UInt64,
    reasoning_tokens UInt64,
    cost_usd Nullable(Float64),
    usage_estimated UInt8,
    duration_s Float64,
    ttft_s Nullable(Float64),
    queue_wait_s Nullable(Float64),
    itl_p50_s Nullable(Float64),
    itl_p95_s Nullable(Float64),
    itl_max_s Nullable(Float64),
    tpot_s Nullable(Float64),
    status LowCardinality(String),
    error_type LowCardinality(String),
    error_class LowCardinality(String),
    finish_reason LowCardinality(String)
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, ts)
-- Views get every block, even one otel_traces drops as a repeat; this table must deduplicate too
-- (deduplicate_blocks_in_dependent_materialized_views, on by default), or a retried insert
-- doubles llm_spans while otel_traces stays right.
SETTINGS non_replicated_deduplication_window = 1000;

-- A table from before `kind`: old rows get it computed from their operation when read.
ALTER TABLE llm_spans ADD COLUMN IF NOT EXISTS kind LowCardinality(String) DEFAULT $KIND_OF_OPERATION AFTER operation;

-- The session (GenAI's gen_ai.conversation.id, OpenInference's session.id, ...): old rows have none.
ALTER TABLE llm_spans ADD COLUMN IF NOT EXISTS session_id String AFTER user_id;

-- A call without reported usage (a stream without usage) has unknown tokens, not 0: NULL. Rows
-- stored before this keep their 0 (what a missing count meant then cannot be told apart).
ALTER TABLE llm_spans MODIFY COLUMN input_tokens Nullable(UInt64);
ALTER TABLE llm_spans MODIFY COLUMN output_tokens Nullable(UInt64);

-- A cost from the SDK's estimated token counts (infersight.usage.estimated) is summed apart from
-- known cost (store/_money.py). Old rows: 0, not estimated (what was estimated then is not known).
ALTER TABLE llm_spans ADD COLUMN IF NOT EXISTS usage_estimated UInt8 AFTER cost_usd;

-- Attribute names differ between instrumentations. Since the ingest normaliser
-- (ingest/_normalize.py) every span arrives with the canonical names too; each column still
-- takes the first one present, in the order the GenAI conventions, their deprecated names,
-- OpenInference (llm.*, openinference.span.kind), older OpenLLMetry (llm.usage.*,
-- llm.request.type), because spool entries decoded before the normaliser hold only the originals.
-- v4 replaces v3 (the LLM operations generated from store/_kinds.py, which v3 wrote out without
-- `completion`; estimated usage marked, and a cost priced from half an estimate unknown), which
-- replaced v2 (unknown tokens as NULL, the session, a call two instrumentations describe counted
-- once), which replaced v1 (only the current GenAI names); a view's query cannot be replaced in
-- place.
DROP VIEW IF EXISTS llm_spans_mv;

DROP VIEW IF EXISTS llm_spans_mv_v2;

DROP VIEW IF EXISTS llm_spans_mv_v3;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_spans_mv_v4 TO llm_spans AS
SELECT
    ResourceAttributes['infersight.project'] AS project,
    Timestamp AS ts,
    TraceId AS trace_id,
    SpanId AS span_id,
    ParentSpanId AS parent_span_id,
    ServiceName AS service,
    ResourceAttributes['service.version'] AS service_version,
    coalesce(
        nullIf(SpanAttributes['gen_ai.operation.name'], ''),
        $OPERATION_OF_OPENINFERENCE_KIND,
        nullIf(SpanAttributes['llm.request.type'], ''),
        '') AS operation,
    SpanAttributes['infersight.tenant.id'] AS tenant,
    coalesce(nullIf(SpanAttributes['infersight.user.id'], ''), SpanAttributes['user.id']) AS user_id,
    coalesce(nullIf(SpanAttributes['gen_ai.conversation.id'], ''), SpanAttributes['session.id']) AS session_id,
    SpanAttributes['infersight.route'] AS route,
    coalesce(
        nullIf(SpanAttributes['gen_ai.provider.name'], ''), nullIf(SpanAttributes['gen_ai.system'], ''),
        nullIf(SpanAttributes['llm.provider'], ''), SpanAttributes['llm.system']) AS provider,
    coalesce(nullIf(SpanAttributes['gen_ai.request.model'], ''), SpanAttributes['llm.model_name']) AS request_model,
    coalesce(
        nullIf(SpanAttributes['gen_ai.response.model'], ''), nullIf(SpanAttributes['gen_ai.request.model'], ''),
        SpanAttributes['llm.model_name']) AS model,
    toUInt64OrNull(coalesce(
        nullIf(SpanAttributes['gen_ai.usage.input_tokens'], ''), nullIf(SpanAttributes['gen_ai.usage.prompt_tokens'], ''),
        nullIf(SpanAttributes['llm.token_count.prompt'], ''), SpanAttributes['llm.usage.prompt_tokens'])) AS input_tokens,
    toUInt64OrNull(coalesce(
        nullIf(SpanAttributes['gen_ai.usage.output_tokens'], ''), nullIf(SpanAttributes['gen_ai.usage.completion_tokens'], ''),
        nullIf(SpanAttributes['llm.token_count.completion'], ''), SpanAttributes['llm.usage.completion_tokens'])) AS output_tokens,
    toUInt64OrZero(coalesce(
        nullIf(SpanAttributes['gen_ai.usage.cache_read.input_tokens'], ''),
        SpanAttributes['llm.token_count.prompt_details.cache_read'])) AS cache_read_tokens,
    toUInt64OrZero(coalesce(
        nullIf(SpanAttributes['gen_ai.usage.cache_creation.input_tokens'], ''),
        SpanAttributes['llm.token_count.prompt_details.cache_write'])) AS cache_creation_tokens,
    toUInt64OrZero(coalesce(
        nullIf(SpanAttributes['gen_ai.usage.reasoning.output_tokens'], ''),
        SpanAttributes['llm.token_count.completion_details.reasoning'])) AS reasoning_tokens,
    SpanAttributes['infersight.usage.estimated'] IN ('true', '1') AS usage_estimated,
    -- Half an estimate (input unknown, output estimated) priced only the output: its cost is
    -- unknown, not the ~40% of it that older SDKs stored (sdk/_pricing.py priceable).
    if(usage_estimated AND input_tokens IS NULL, NULL,
        toFloat64OrNull(SpanAttributes['infersight.cost.usd'])) AS cost_usd,
    Duration / 1e9 AS duration_s,
    toFloat64OrNull(SpanAttributes['gen_ai.response.time_to_first_chunk']) AS ttft_s,
    toFloat64OrNull(SpanAttributes['infersight.queue.wait_s']) AS queue_wait_s,
    toFloat64OrNull(SpanAttributes['infersight.itl.p50_s']) AS itl_p50_s,
    toFloat64OrNull(SpanAttributes['infersight.itl.p95_s']) AS itl_p95_s,
    toFloat64OrNull(SpanAttributes['infersight.itl.max_s']) AS itl_max_s,
    toFloat64OrNull(SpanAttributes['infersight.tpot_s']) AS tpot_s,
    if(StatusCode = 'Error', 'error', 'ok') AS status,
    SpanAttributes['error.type'] AS error_type,
    SpanAttributes['infersight.error.class'] AS error_class,
    coalesce(
        nullIf(JSONExtractString(SpanAttributes['gen_ai.response.finish_reasons'], 1), ''),
        SpanAttributes['llm.finish_reason']) AS finish_reason
FROM otel_traces
-- One model call described by two spans is counted once: a provider SDK's own span under an
-- infersight LLM span (the SDK marks it), and the outer span of any other nested pair (the
-- ingest step marks it with the span it repeats, ingest/_nesting.py).
WHERE operation != ''
    AND NOT (SpanAttributes['infersight.parent_llm_span'] != '' AND operation IN $LLM_OPERATIONS)
    AND SpanAttributes['infersight.same_call_as'] = '';

-- Rollups for dashboard speed (infersight.dashboards): GenAI spans pre-aggregated per minute and
-- per hour and per (service, version, operation, route, tenant, model). Dashboards read whole
-- hours from llm_rollup_1h and the partial hours at a range's edges from llm_rollup_1m, with
-- sum() and the -Merge combinators (never FINAL). Percentile states are t-digests of the levels
-- below; a query must name exactly these levels.
--
-- Two feeders per table. The first reads llm_spans, so the attribute mapping (GenAI names,
-- OpenInference, ...) lives in one place. The second adds what llm_spans has no column for,
-- prefill time and rerank candidate counts; only the infersight SDK sets those attributes, and
-- it sets the GenAI names, so the simple mapping there yields the same keys as llm_spans.
-- Both targets deduplicate a retried insert like llm_spans does.
CREATE TABLE IF NOT EXISTS llm_rollup_1m (
    project LowCardinality(String),
    period DateTime('UTC'),  -- the start of the minute (llm_rollup_1m) or hour (llm_rollup_1h)
    service LowCardinality(String),
    service_version LowCardinality(String),
    operation LowCardinality(String),
    route LowCardinality(String),
    tenant LowCardinality(String),
    model LowCardinality(String),
    requests SimpleAggregateFunction(sum, UInt64),
    errors SimpleAggregateFunction(sum, UInt64),
    transient_errors SimpleAggregateFunction(sum, UInt64),
    input_tokens SimpleAggregateFunction(sum, UInt64),
    output_tokens SimpleAggregateFunction(sum, UInt64),
    cost_usd SimpleAggregateFunction(sum, Float64),
    rerank_candidates SimpleAggregateFunction(sum, UInt64),
    duration_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Float64),
    ttft_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64)),
    queue_wait_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64)),
    prefill_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64)),
    itl_p50_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64)),
    itl_p95_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64)),
    tpot_s AggregateFunction(quantilesTDigest(0.5, 0.95, 0.99, 0.999), Nullable(Float64))
) ENGINE = AggregatingMergeTree()
PARTITION BY toDate(period)
ORDER BY (project, period, service, service_version, operation, route, tenant, model)
-- Ranges older than 30 days start on a whole hour, so they never need minutes this old.
TTL period + INTERVAL 35 DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS llm_rollup_1h AS llm_rollup_1m
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(period)
ORDER BY (project, period, service, service_version, operation, route, tenant, model)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_rollup_1m_mv TO llm_rollup_1m AS
SELECT
    project, toStartOfMinute(toDateTime(ts, 'UTC')) AS period,
    service, service_version, operation, route, tenant, model,
    count() AS requests,
    countIf(status = 'error') AS errors,
    countIf(status = 'error' AND error_class = 'transient') AS transient_errors,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(ifNull(cost_usd, 0)) AS cost_usd,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(duration_s) AS duration_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(ttft_s) AS ttft_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(queue_wait_s) AS queue_wait_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(itl_p50_s) AS itl_p50_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(itl_p95_s) AS itl_p95_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(tpot_s) AS tpot_s
FROM llm_spans
GROUP BY project, period, service, service_version, operation, route, tenant, model;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_rollup_1h_mv TO llm_rollup_1h AS
SELECT
    project, toStartOfHour(toDateTime(ts, 'UTC')) AS period,
    service, service_version, operation, route, tenant, model,
    count() AS requests,
    countIf(status = 'error') AS errors,
    countIf(status = 'error' AND error_class = 'transient') AS transient_errors,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(ifNull(cost_usd, 0)) AS cost_usd,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(duration_s) AS duration_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(ttft_s) AS ttft_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(queue_wait_s) AS queue_wait_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(itl_p50_s) AS itl_p50_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(itl_p95_s) AS itl_p95_s,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(tpot_s) AS tpot_s
FROM llm_spans
GROUP BY project, period, service, service_version, operation, route, tenant, model;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_rollup_1m_sdk_mv TO llm_rollup_1m AS
SELECT
    ResourceAttributes['infersight.project'] AS project,
    toStartOfMinute(toDateTime(Timestamp, 'UTC')) AS period,
    ServiceName AS service,
    ResourceAttributes['service.version'] AS service_version,
    SpanAttributes['gen_ai.operation.name'] AS operation,
    SpanAttributes['infersight.route'] AS route,
    SpanAttributes['infersight.tenant.id'] AS tenant,
    if(SpanAttributes['gen_ai.response.model'] != '', SpanAttributes['gen_ai.response.model'], SpanAttributes['gen_ai.request.model']) AS model,
    sum(toUInt64OrZero(SpanAttributes['infersight.rerank.candidates'])) AS rerank_candidates,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(toFloat64OrNull(SpanAttributes['infersight.prefill_s'])) AS prefill_s
FROM otel_traces
WHERE SpanAttributes['gen_ai.operation.name'] != ''
    AND (SpanAttributes['infersight.prefill_s'] != '' OR SpanAttributes['infersight.rerank.candidates'] != '')
GROUP BY project, period, service, service_version, operation, route, tenant, model;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_rollup_1h_sdk_mv TO llm_rollup_1h AS
SELECT
    ResourceAttributes['infersight.project'] AS project,
    toStartOfHour(toDateTime(Timestamp, 'UTC')) AS period,
    ServiceName AS service,
    ResourceAttributes['service.version'] AS service_version,
    SpanAttributes['gen_ai.operation.name'] AS operation,
    SpanAttributes['infersight.route'] AS route,
    SpanAttributes['infersight.tenant.id'] AS tenant,
    if(SpanAttributes['gen_ai.response.model'] != '', SpanAttributes['gen_ai.response.model'], SpanAttributes['gen_ai.request.model']) AS model,
    sum(toUInt64OrZero(SpanAttributes['infersight.rerank.candidates'])) AS rerank_candidates,
    quantilesTDigestState(0.5, 0.95, 0.99, 0.999)(toFloat64OrNull(SpanAttributes['infersight.prefill_s'])) AS prefill_s
FROM otel_traces
WHERE SpanAttributes['gen_ai.operation.name'] != ''
    AND (SpanAttributes['infersight.prefill_s'] != '' OR SpanAttributes['infersight.rerank.candidates'] != '')
GROUP BY project, period, service, service_version, operation, route, tenant, model;

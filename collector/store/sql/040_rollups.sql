-- Dashboard speed (infersight.dashboards). Pages read whole hours from the hourly rollups and only
-- the partial hours at a range's edges from llm_spans, adding both up (never FINAL).
--
-- Latencies are kept as log-scale histograms, Map(bucket, calls), summed with sumMap: merging
-- hours is then an addition, where t-digest states took ~8 us each to merge. Bucket 0 holds
-- zero; bucket i >= 1 holds values within 4.4% of 1e-4 * 2^((i - 1) / 8) seconds (0.1 ms to
-- ~100 h, clamped). $HISTOGRAM(column) is store/_histogram.histogram_sql, the one definition
-- that the figures over raw spans (store/_metrics, dashboards/_rollup) use too.
--
-- llm_span_extras holds what llm_spans has no column for: prefill time and rerank candidate
-- counts. Only the infersight SDK sets those attributes, and it also sets the GenAI names, so the
-- simple mapping below yields the same keys as llm_spans' mapping does.
-- Every target deduplicates a retried insert, as llm_spans does.
-- An earlier draft of this file (t-digest states, a per-minute rollup) may exist in a data dir.
DROP VIEW IF EXISTS llm_rollup_1m_mv;
DROP VIEW IF EXISTS llm_rollup_1h_mv;
DROP VIEW IF EXISTS llm_rollup_1m_sdk_mv;
DROP VIEW IF EXISTS llm_rollup_1h_sdk_mv;
DROP TABLE IF EXISTS llm_rollup_1m;
DROP TABLE IF EXISTS llm_rollup_1h;

CREATE TABLE IF NOT EXISTS llm_span_extras (
    project LowCardinality(String),
    ts DateTime64(9),
    service LowCardinality(String),
    service_version LowCardinality(String),
    operation LowCardinality(String),
    route LowCardinality(String),
    tenant LowCardinality(String),
    model LowCardinality(String),
    prefill_s Nullable(Float64),
    rerank_candidates UInt64
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, ts)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_span_extras_mv TO llm_span_extras AS
SELECT
    ResourceAttributes['infersight.project'] AS project,
    Timestamp AS ts,
    ServiceName AS service,
    ResourceAttributes['service.version'] AS service_version,
    SpanAttributes['gen_ai.operation.name'] AS operation,
    SpanAttributes['infersight.route'] AS route,
    SpanAttributes['infersight.tenant.id'] AS tenant,
    if(SpanAttributes['gen_ai.response.model'] != '', SpanAttributes['gen_ai.response.model'], SpanAttributes['gen_ai.request.model']) AS model,
    toFloat64OrNull(SpanAttributes['infersight.prefill_s']) AS prefill_s,
    toUInt64OrZero(SpanAttributes['infersight.rerank.candidates']) AS rerank_candidates
FROM otel_traces
WHERE SpanAttributes['gen_ai.operation.name'] != ''
    AND (SpanAttributes['infersight.prefill_s'] != '' OR SpanAttributes['infersight.rerank.candidates'] != '');

-- Per hour without tenant: small enough to read a month of it in a few milliseconds.
CREATE TABLE IF NOT EXISTS llm_hourly (
    project LowCardinality(String),
    period DateTime('UTC'),
    service LowCardinality(String),
    service_version LowCardinality(String),
    operation LowCardinality(String),
    route LowCardinality(String),
    model LowCardinality(String),
    requests SimpleAggregateFunction(sum, UInt64),
    errors SimpleAggregateFunction(sum, UInt64),
    transient_errors SimpleAggregateFunction(sum, UInt64),
    input_tokens SimpleAggregateFunction(sum, UInt64),
    output_tokens SimpleAggregateFunction(sum, UInt64),
    cost_usd SimpleAggregateFunction(sum, Float64),
    rerank_candidates SimpleAggregateFunction(sum, UInt64),
    duration_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    ttft_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    queue_wait_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    prefill_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    itl_p50_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    itl_p95_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    tpot_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64))
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(period)
ORDER BY (project, period, service, service_version, operation, route, model)
SETTINGS non_replicated_deduplication_window = 1000;

-- v3: known, estimated and unknown cost apart, money as exact decimals (store/_money.py: the same
-- sums as the figures over raw rows, to the picodollar). Hours stored before v3 read their float
-- total as known cost, priced when it is not 0, and usage reported when they have tokens.
ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS priced_cost_usd SimpleAggregateFunction(sum, Decimal128(12)) DEFAULT toDecimal128(cost_usd, 12) AFTER cost_usd;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS priced_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(cost_usd > 0, requests, 0) AFTER priced_cost_usd;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS estimated_cost_usd SimpleAggregateFunction(sum, Decimal128(12)) AFTER priced_calls;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS estimated_calls SimpleAggregateFunction(sum, UInt64) AFTER estimated_cost_usd;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS unpriced_calls SimpleAggregateFunction(sum, UInt64) AFTER estimated_calls;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS input_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(input_tokens > 0, requests, 0) AFTER unpriced_calls;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS output_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(output_tokens > 0, requests, 0) AFTER input_calls;

ALTER TABLE llm_hourly ADD COLUMN IF NOT EXISTS unknown_usage_calls SimpleAggregateFunction(sum, UInt64) AFTER output_calls;

-- v2 summed tokens of calls with unknown usage (NULL in llm_spans) as nothing, v1 as UInt64 only.
DROP VIEW IF EXISTS llm_hourly_mv;

DROP VIEW IF EXISTS llm_hourly_mv_v2;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_hourly_mv_v3 TO llm_hourly AS
SELECT
    project, toStartOfHour(toDateTime(ts, 'UTC')) AS period, service, service_version, operation, route, model,
    count() AS requests,
    countIf(status = 'error') AS errors,
    countIf(status = 'error' AND error_class = 'transient') AS transient_errors,
    sum(ifNull(input_tokens, 0)) AS input_tokens,
    sum(ifNull(output_tokens, 0)) AS output_tokens,
    sumIf($EXACT_USD, $KNOWN_COST) AS priced_cost_usd,
    countIf($KNOWN_COST) AS priced_calls,
    sumIf($EXACT_USD, $ESTIMATED_COST) AS estimated_cost_usd,
    countIf($ESTIMATED_COST) AS estimated_calls,
    countIf($UNPRICED) AS unpriced_calls,
    countIf($REPORTED_INPUT) AS input_calls,
    countIf($REPORTED_OUTPUT) AS output_calls,
    countIf($UNKNOWN_USAGE) AS unknown_usage_calls,
    $HISTOGRAM(duration_s) AS duration_s,
    $HISTOGRAM(ttft_s) AS ttft_s,
    $HISTOGRAM(queue_wait_s) AS queue_wait_s,
    $HISTOGRAM(itl_p50_s) AS itl_p50_s,
    $HISTOGRAM(itl_p95_s) AS itl_p95_s,
    $HISTOGRAM(tpot_s) AS tpot_s
FROM llm_spans AS llm_spans
GROUP BY project, period, service, service_version, operation, route, model;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_hourly_extras_mv TO llm_hourly AS
SELECT
    project, toStartOfHour(toDateTime(ts, 'UTC')) AS period, service, service_version, operation, route, model,
    sum(rerank_candidates) AS rerank_candidates,
    $HISTOGRAM(prefill_s) AS prefill_s
FROM llm_span_extras
GROUP BY project, period, service, service_version, operation, route, model;

-- Per hour and tenant (tenants can number in the thousands): read when a view is per tenant.
CREATE TABLE IF NOT EXISTS llm_tenant_hourly (
    project LowCardinality(String),
    period DateTime('UTC'),
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
    duration_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    ttft_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    queue_wait_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    prefill_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    itl_p50_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    itl_p95_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64)),
    tpot_s SimpleAggregateFunction(sumMap, Map(UInt8, UInt64))
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(period)
ORDER BY (project, period, tenant, service, service_version, operation, route, model)
SETTINGS non_replicated_deduplication_window = 1000;

-- v3: known, estimated and unknown cost apart, money as exact decimals (store/_money.py: the same
-- sums as the figures over raw rows, to the picodollar). Hours stored before v3 read their float
-- total as known cost, priced when it is not 0, and usage reported when they have tokens.
ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS priced_cost_usd SimpleAggregateFunction(sum, Decimal128(12)) DEFAULT toDecimal128(cost_usd, 12) AFTER cost_usd;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS priced_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(cost_usd > 0, requests, 0) AFTER priced_cost_usd;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS estimated_cost_usd SimpleAggregateFunction(sum, Decimal128(12)) AFTER priced_calls;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS estimated_calls SimpleAggregateFunction(sum, UInt64) AFTER estimated_cost_usd;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS unpriced_calls SimpleAggregateFunction(sum, UInt64) AFTER estimated_calls;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS input_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(input_tokens > 0, requests, 0) AFTER unpriced_calls;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS output_calls SimpleAggregateFunction(sum, UInt64) DEFAULT if(output_tokens > 0, requests, 0) AFTER input_calls;

ALTER TABLE llm_tenant_hourly ADD COLUMN IF NOT EXISTS unknown_usage_calls SimpleAggregateFunction(sum, UInt64) AFTER output_calls;

-- v2 summed tokens of calls with unknown usage (NULL in llm_spans) as nothing, v1 as UInt64 only.
DROP VIEW IF EXISTS llm_tenant_hourly_mv;

DROP VIEW IF EXISTS llm_tenant_hourly_mv_v2;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_tenant_hourly_mv_v3 TO llm_tenant_hourly AS
SELECT
    project, toStartOfHour(toDateTime(ts, 'UTC')) AS period, service, service_version, operation, route, tenant, model,
    count() AS requests,
    countIf(status = 'error') AS errors,
    countIf(status = 'error' AND error_class = 'transient') AS transient_errors,
    sum(ifNull(input_tokens, 0)) AS input_tokens,
    sum(ifNull(output_tokens, 0)) AS output_tokens,
    sumIf($EXACT_USD, $KNOWN_COST) AS priced_cost_usd,
    countIf($KNOWN_COST) AS priced_calls,
    sumIf($EXACT_USD, $ESTIMATED_COST) AS estimated_cost_usd,
    countIf($ESTIMATED_COST) AS estimated_calls,
    countIf($UNPRICED) AS unpriced_calls,
    countIf($REPORTED_INPUT) AS input_calls,
    countIf($REPORTED_OUTPUT) AS output_calls,
    countIf($UNKNOWN_USAGE) AS unknown_usage_calls,
    $HISTOGRAM(duration_s) AS duration_s,
    $HISTOGRAM(ttft_s) AS ttft_s,
    $HISTOGRAM(queue_wait_s) AS queue_wait_s,
    $HISTOGRAM(itl_p50_s) AS itl_p50_s,
    $HISTOGRAM(itl_p95_s) AS itl_p95_s,
    $HISTOGRAM(tpot_s) AS tpot_s
FROM llm_spans AS llm_spans
GROUP BY project, period, service, service_version, operation, route, tenant, model;

CREATE MATERIALIZED VIEW IF NOT EXISTS llm_tenant_hourly_extras_mv TO llm_tenant_hourly AS
SELECT
    project, toStartOfHour(toDateTime(ts, 'UTC')) AS period, service, service_version, operation, route, tenant, model,
    sum(rerank_candidates) AS rerank_candidates,
    $HISTOGRAM(prefill_s) AS prefill_s
FROM llm_span_extras
GROUP BY project, period, service, service_version, operation, route, tenant, model;

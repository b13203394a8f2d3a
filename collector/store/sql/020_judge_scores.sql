-- The judges' tables (infersight.judges): scores, the spend ledger, frozen panels.
-- judge_scores: LLM-judge scores of sampled spans and panel items. Scores are only
-- comparable within one judge_model and one (rubric_id, rubric_version): queries group by them.
-- ts is when the judged span happened (trends follow the app, not the judge); judged_at is when
-- it was judged. sample_rate is the span's inclusion probability in the stratified sample (1 for
-- panel items): weight a mean by 1 / sample_rate to undo the stratification.
CREATE TABLE IF NOT EXISTS judge_scores (
    project LowCardinality(String),
    ts DateTime64(9),
    judged_at DateTime64(3),
    trace_id String,
    span_id String,
    tenant LowCardinality(String),
    route LowCardinality(String),
    service_version LowCardinality(String),
    judge_model LowCardinality(String),
    rubric_id LowCardinality(String),
    rubric_version UInt32,
    score UInt8,
    reason String,
    judge_cost_usd Nullable(Float64),
    judge_latency_s Float64,
    sample_rate Float64,
    source LowCardinality(String)
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (project, ts, span_id);

-- Every judgement attempted, successful or not: the judge's own spend (calls, tokens, dollars)
-- and the ledger the daily budget is checked against. ts is when the call was made.
-- outcome: ok | invalid_verdict | transient | rejected. purpose: sample | panel.
CREATE TABLE IF NOT EXISTS judge_calls (
    project LowCardinality(String),
    ts DateTime64(3),
    trace_id String,
    span_id String,
    judge_model LowCardinality(String),
    rubric_id LowCardinality(String),
    rubric_version UInt32,
    purpose LowCardinality(String),
    outcome LowCardinality(String),
    attempts UInt16,
    input_tokens UInt64,
    output_tokens UInt64,
    cost_usd Nullable(Float64),
    latency_s Float64,
    error String
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (project, ts);

-- Frozen evaluation panels (infersight.judges): a fixed set of inputs of one route, so app
-- versions can be compared on the same inputs. items is a JSON array of
-- {"input_key", "messages": [{"role", "content"}], "context": [...], "source": {...}}.
-- A panel is written once and never changed.
CREATE TABLE IF NOT EXISTS judge_panels (
    project LowCardinality(String),
    panel_id String,
    route LowCardinality(String),
    created DateTime64(3),
    size UInt32,
    items String CODEC(ZSTD(3))
) ENGINE = MergeTree()
ORDER BY (project, panel_id);

-- Soft failures found in LLM outputs: one row per detection (dashboards, weekly report, judge sampler).
CREATE TABLE IF NOT EXISTS detections (
    project LowCardinality(String),
    ts DateTime64(9),
    trace_id String,
    span_id String,
    service LowCardinality(String),
    tenant LowCardinality(String),
    route LowCardinality(String),
    model LowCardinality(String),
    detector LowCardinality(String),
    version LowCardinality(String),
    label LowCardinality(String),
    score Float64,
    evidence String
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, ts)
SETTINGS non_replicated_deduplication_window = 1000;

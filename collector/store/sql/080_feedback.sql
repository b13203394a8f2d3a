-- Feedback on a trace or one of its spans: a user's thumbs or a score from the app, the API or the
-- dashboards. Append-only; kind 'thumbs' stores 1 (up) or 0 (down) in value, kind 'score' the
-- number given. Compared only like with like: grouped by (name, kind), never mixed with judge scores.
CREATE TABLE IF NOT EXISTS feedback (
    project LowCardinality(String),
    id String,
    ts DateTime64(3),
    trace_id String,
    span_id String DEFAULT '',
    name LowCardinality(String),
    kind LowCardinality(String),
    value Float64,
    comment String DEFAULT '',
    source LowCardinality(String) DEFAULT 'api',
    created_by String DEFAULT ''
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (project, trace_id, ts);

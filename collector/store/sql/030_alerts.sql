-- The current state of every alert ever seen (one row per fingerprint after merges; read with FINAL),
-- so a restarted evaluator neither pages twice nor forgets to resolve.
CREATE TABLE IF NOT EXISTS alerts (
    project LowCardinality(String),
    fingerprint String,
    name LowCardinality(String),
    status LowCardinality(String),
    labels Map(LowCardinality(String), String),
    summary String,
    details String,
    numbers Map(LowCardinality(String), Float64),
    link String,
    starts_at DateTime64(3),
    ends_at Nullable(DateTime64(3)),
    last_notified_at Nullable(DateTime64(3)),
    updated_at DateTime64(3)
) ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (project, fingerprint);

-- Every notification-worthy transition (firing, repeat, resolved): the history dashboards show.
CREATE TABLE IF NOT EXISTS alert_events (
    project LowCardinality(String),
    ts DateTime64(3),
    fingerprint String,
    name LowCardinality(String),
    event LowCardinality(String),
    labels Map(LowCardinality(String), String),
    summary String,
    details String,
    numbers Map(LowCardinality(String), Float64),
    link String,
    delivered Array(String),
    failed Array(String)
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (project, ts);

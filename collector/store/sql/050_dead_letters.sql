-- Acknowledged requests the store refused for what they hold (a row ClickHouse cannot parse, a
-- view that fails on it): set aside whole, with the reason, so the spans behind them proceed and
-- nothing acknowledged is dropped. `rows` is the otel_traces JSONEachRow, ready to re-insert once
-- the cause is fixed.
CREATE TABLE IF NOT EXISTS dead_letters (
    project LowCardinality(String),
    received DateTime64(3),
    stored DateTime64(3) DEFAULT now64(3),
    reason String,
    spans UInt32,
    rows String CODEC(ZSTD(3)),
    detections String CODEC(ZSTD(3))
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(received)
ORDER BY (project, received)
SETTINGS non_replicated_deduplication_window = 100;

-- Queue depth samples: the SDK's watch_queue gauges (from /v1/metrics) and the collector's own spool.
CREATE TABLE IF NOT EXISTS queue_depth (
    project LowCardinality(String),
    service LowCardinality(String),
    queue LowCardinality(String),
    ts DateTime64(3),
    depth Float64,
    oldest_age_s Nullable(Float64)
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, service, queue, ts)
TTL toDateTime(ts) + INTERVAL 30 DAY;

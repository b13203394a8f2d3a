-- Queue depth samples: the SDK's watch_queue gauges (from /v1/metrics) and the collector's own spool.
-- `instance` is the reporting process (OTel resource service.instance.id, else k8s.pod.name, else
-- host.name and process.pid): replicas of one service report the same queue name, and each
-- replica's queue is its own series, or one stalled replica hides behind two healthy ones.
CREATE TABLE IF NOT EXISTS queue_depth (
    project LowCardinality(String),
    service LowCardinality(String),
    queue LowCardinality(String),
    instance LowCardinality(String) DEFAULT '',
    ts DateTime64(3),
    depth Float64,
    oldest_age_s Nullable(Float64)
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, service, queue, instance, ts)
TTL toDateTime(ts) + INTERVAL 30 DAY;

-- A table from before `instance`: its rows are one series per queue name, as they were stored.
ALTER TABLE queue_depth ADD COLUMN IF NOT EXISTS instance LowCardinality(String) DEFAULT '' AFTER queue;

-- Dead letters put back into otel_traces (`infersight dead-letters replay`). Append-only, so it
-- needs no mutation and works the same on a cluster: a dead letter with a row here is resolved
-- and no longer counted on the Overview or in /api/v1/summary.
CREATE TABLE IF NOT EXISTS dead_letter_replays (
    project LowCardinality(String),
    received DateTime64(3),
    stored DateTime64(3),
    replayed DateTime64(3) DEFAULT now64(3)
) ENGINE = MergeTree()
ORDER BY (project, received)
SETTINGS non_replicated_deduplication_window = 100;

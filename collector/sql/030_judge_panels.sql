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

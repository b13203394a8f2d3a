-- GenAI events that instrumentations send as OTLP log records (/v1/logs) rather than as span
-- attributes: openai-v2's gen_ai.choice (a stream's finish reason, the answer when content is
-- captured), gen_ai.*.message (the prompt), gen_ai.client.inference.operation.details. They
-- arrive in other requests than their span, before or after it, so they are kept apart and read
-- beside the span by (trace_id, span_id): the ORDER BY after the project.
CREATE TABLE IF NOT EXISTS genai_events (
    project LowCardinality(String),
    ts DateTime64(9),
    trace_id String,
    span_id String,
    service LowCardinality(String),
    event_name LowCardinality(String),
    attributes Map(LowCardinality(String), String),
    body String,
    finish_reasons String
) ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (project, trace_id, span_id, ts)
-- A retried request carries the same token (a hash of its body): ClickHouse drops the repeat.
SETTINGS non_replicated_deduplication_window = 1000;

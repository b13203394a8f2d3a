-- Silences (Alertmanager's model: label matchers, a start and an end, who and why), one row per
-- version: expiring or editing one appends a row with a later updated_at, and readers take each
-- id's latest row (argMax), which holds on a cluster's Distributed table as well as here.
CREATE TABLE IF NOT EXISTS silences (
    project LowCardinality(String),
    id String,
    matchers String,
    starts_at DateTime64(3),
    ends_at DateTime64(3),
    created_by String,
    comment String,
    updated_at DateTime64(3)
) ENGINE = MergeTree()
ORDER BY (project, id, updated_at);

-- Acknowledgements of one firing alert: its fingerprint and the start of the firing it acknowledges,
-- so an acknowledgement ends when that firing resolves. Append-only.
CREATE TABLE IF NOT EXISTS alert_acks (
    project LowCardinality(String),
    fingerprint String,
    starts_at DateTime64(3),
    acked_at DateTime64(3),
    acked_by String,
    note String,
    name LowCardinality(String),
    summary String
) ENGINE = MergeTree()
ORDER BY (project, fingerprint, starts_at, acked_at);

-- Notifications held back by a silence (state 'owed', with what the alert said), and what became of
-- them: 'sent' once the silence lifted while the alert still fired, 'dropped' when it resolved first.
-- Append-only; a firing's latest row (argMax over ts) is its state.
CREATE TABLE IF NOT EXISTS alert_holds (
    project LowCardinality(String),
    fingerprint String,
    starts_at DateTime64(3),
    ts DateTime64(3),
    state LowCardinality(String),
    reason String,
    name LowCardinality(String),
    labels Map(LowCardinality(String), String),
    summary String,
    details String,
    numbers Map(LowCardinality(String), Float64),
    link String
) ENGINE = MergeTree()
ORDER BY (project, fingerprint, starts_at, ts);

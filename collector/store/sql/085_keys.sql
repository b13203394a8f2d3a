-- API keys shared by every collector of a deployment on a ClickHouse server (the embedded store keeps
-- them in the data directory's key file). Only a key's SHA-256 is stored, with its display prefix.
-- Append-only, so it reads the same through a cluster's Distributed table: creating a key writes a row
-- with revoked_at NULL, revoking it writes the same row again with revoked_at set, and readers group
-- by prefix (min(revoked_at): the first revocation). Keyed by prefix, not project: a lookup is by key,
-- whichever project it belongs to, and every collector reads the whole (small) table.
CREATE TABLE IF NOT EXISTS api_keys (
    prefix String,
    key_hash String,
    project LowCardinality(String),
    role LowCardinality(String),
    created_at DateTime64(3),
    revoked_at Nullable(DateTime64(3))
) ENGINE = MergeTree()
ORDER BY (prefix, created_at);

-- Dashboard sessions ended by a logout before their cookie expires; kept until it would have.
CREATE TABLE IF NOT EXISTS ended_sessions (
    session_id String,
    until DateTime64(3)
) ENGINE = MergeTree()
ORDER BY session_id
TTL toDateTime(until) + INTERVAL 1 DAY;

-- Secrets that sign dashboard cookies. Collectors starting at once may each add one: a cookie signed
-- with any of them is good everywhere, and new cookies are signed with the smallest.
CREATE TABLE IF NOT EXISTS session_secrets (
    secret String,
    created_at DateTime64(3)
) ENGINE = MergeTree()
ORDER BY secret;

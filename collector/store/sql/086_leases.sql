-- Leases: which collector of a deployment runs a job that must run once (the alert evaluator, the
-- judge loop). Append-only claims, one row per take or renewal: `holder` claims `name` from
-- `claimed_at` to `expires_at` (the holder's clock). `written_at` is the store's clock at the
-- insert and orders the claims; the holder is decided when read (store/_lease.py), never by an
-- update, so it reads the same through a cluster's Distributed table. Not per project: a lease is
-- the deployment's. Old claims say nothing and expire after a day.
CREATE TABLE IF NOT EXISTS leases (
    name LowCardinality(String),
    holder String,
    claimed_at DateTime64(3),
    expires_at DateTime64(3),
    written_at DateTime64(6) DEFAULT now64(6)
) ENGINE = MergeTree()
ORDER BY (name, written_at)
TTL toDateTime(expires_at) + INTERVAL 1 DAY;

-- How a queue series ends, and who reported it. `ended`: the SDK's last point on a clean shutdown
-- (metric attribute infersight.queue.ended), so a deploy retires its series instead of paging that
-- it stopped reporting. `instance_label`: the reporting process as an operator knows it (pod, host,
-- pid), for the page's text; `instance` stays the series' identity.
ALTER TABLE queue_depth ADD COLUMN IF NOT EXISTS ended Bool DEFAULT false;
ALTER TABLE queue_depth ADD COLUMN IF NOT EXISTS instance_label String DEFAULT '';

-- The (status, id) index served listing and counting by status, and every status
-- change paid for it: three times per item on the hot path (QUEUED, PROCESSING,
-- READY) and once per orphan in recovery. QUEUED and PROCESSING items have
-- indexes of their own (items_queued, items_processing), so this one now leaves
-- them out: a claim, a requeue and recovery no longer touch it. Queries on other
-- states repeat its condition so that SQLite can use it.
DROP INDEX IF EXISTS items_status_id;
CREATE INDEX items_status_id ON items (status, id) WHERE status NOT IN ('QUEUED', 'PROCESSING');

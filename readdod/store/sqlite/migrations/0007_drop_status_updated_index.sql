-- No query reads items by (status, updated_at): listing pages by (status, id)
-- and the claim uses items_queued. Every status change paid for this index
-- anyway, on the hot path and in recovery.
DROP INDEX IF EXISTS items_status;

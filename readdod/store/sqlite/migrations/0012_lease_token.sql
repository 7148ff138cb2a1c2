-- The fencing token: one more at every claim of an item, so that once the item is
-- claimed again (by another daemon, or by the same one after its lease ran out) no
-- write of the earlier claim's worker matches its lease any more.
ALTER TABLE items ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;

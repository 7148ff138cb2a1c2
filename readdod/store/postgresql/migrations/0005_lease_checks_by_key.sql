-- A lease check names the item by its key. With an index on the lease owner as
-- well, a prepared (generic) plan may pick that one and walk every item the
-- daemon holds, and their dead versions, for each check: 30 times slower under
-- load. The items in flight are few and `items_processing` covers them for the
-- rare look by owner (a dead predecessor's leases, a relay).
DROP INDEX IF EXISTS items_lease_owner;

-- Exports (DESIGN §4.6): one row per export_key, written in the same
-- transaction as the item's move to SHIPPED, so a key that is here has its
-- files on disk and a repeated request with it writes nothing.
CREATE TABLE exports (
    export_key       TEXT PRIMARY KEY,
    item_id          TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    card_version     INTEGER NOT NULL,
    template_version TEXT NOT NULL,
    format           TEXT NOT NULL CHECK (format IN ('markdown', 'json')),
    files            TEXT NOT NULL,
    created_at       INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX exports_item ON exports (item_id, format, created_at);

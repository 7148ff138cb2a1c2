-- The item lifecycle (DESIGN §3, §5.2, §6): capture dedupe, retries across
-- runs, the attempt ledger and full-text search.

-- The canonical form of items.url (readdod.urls.canonical): the same page
-- captured again with the same intent is the same item. Items captured
-- before this migration have none and are never matched.
ALTER TABLE items ADD COLUMN canonical_url TEXT;
-- The first item captured for the same canonical URL with another intent.
ALTER TABLE items ADD COLUMN sibling_of TEXT;
-- Automatic re-queues since the last user action or success (the [retry] policy).
ALTER TABLE items ADD COLUMN auto_retries INTEGER NOT NULL DEFAULT 0;
CREATE INDEX items_canonical ON items (canonical_url) WHERE canonical_url IS NOT NULL;
-- `list --status S`, newest first.
CREATE INDEX items_status_id ON items (status, id);
-- What the retry scheduler looks at: failed items with an automatic retry due.
CREATE INDEX items_retry_due ON items (next_attempt_at)
    WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI') AND next_attempt_at > 0;

-- Why a run failed, for people (the ledger in `show`).
ALTER TABLE runs ADD COLUMN error_message TEXT;

-- Full-text search over title, url, intent and the extracted text. The rowid
-- is the item's rowid; triggers keep it in step with items and with the
-- extraction artifact a person sees (a user's edit wins over system versions).
CREATE VIRTUAL TABLE items_fts USING fts5 (
    title, url, intent, body,
    tokenize = 'unicode61 remove_diacritics 2'
);

INSERT INTO items_fts (rowid, title, url, intent, body)
SELECT i.rowid, coalesce(i.title, ''), coalesce(i.url, ''), i.intent_text,
       coalesce((SELECT json_extract(a.payload, '$.text') FROM artifacts a
                  WHERE a.item_id = i.id AND a.artifact_type = 'extraction'
                  ORDER BY a.created_by = 'user' DESC, a.version DESC LIMIT 1), '')
  FROM items i;

CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, title, url, intent, body)
    VALUES (new.rowid, coalesce(new.title, ''), coalesce(new.url, ''), new.intent_text, '');
END;

CREATE TRIGGER items_fts_update AFTER UPDATE OF title, url, intent_text ON items BEGIN
    UPDATE items_fts
       SET title = coalesce(new.title, ''), url = coalesce(new.url, ''), intent = new.intent_text
     WHERE rowid = new.rowid;
END;

CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.rowid;
END;

CREATE TRIGGER items_fts_extraction AFTER INSERT ON artifacts
WHEN new.artifact_type = 'extraction'
 AND (new.created_by = 'user'
      OR NOT EXISTS (SELECT 1 FROM artifacts a
                      WHERE a.item_id = new.item_id AND a.artifact_type = 'extraction'
                        AND a.created_by = 'user'))
BEGIN
    UPDATE items_fts SET body = coalesce(json_extract(new.payload, '$.text'), '')
     WHERE rowid = (SELECT rowid FROM items WHERE id = new.item_id);
END;

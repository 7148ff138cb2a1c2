-- While an item is PROCESSING, only its extraction step changes its title, and
-- that step adds the extraction artifact in the same transaction. Indexing the
-- title with the extracted text, in the one full-text update the artifact's
-- trigger makes, spares the index a second update per processed item; and the
-- title's update no longer reindexes on the event loop, where step units run.
-- Other changes of title, url or intent are indexed as before, and only when a
-- value really changed.
DROP TRIGGER IF EXISTS items_fts_update;
CREATE TRIGGER items_fts_update AFTER UPDATE OF title, url, intent_text ON items
WHEN new.status <> 'PROCESSING'
 AND (old.title IS NOT new.title OR old.url IS NOT new.url OR old.intent_text IS NOT new.intent_text)
BEGIN
    UPDATE items_fts
       SET title = coalesce(new.title, ''), url = coalesce(new.url, ''), intent = new.intent_text
     WHERE rowid = new.rowid;
END;

DROP TRIGGER IF EXISTS items_fts_extraction;
CREATE TRIGGER items_fts_extraction AFTER INSERT ON artifacts
WHEN new.artifact_type = 'extraction'
 AND (new.created_by = 'user'
      OR NOT EXISTS (SELECT 1 FROM artifacts a
                      WHERE a.item_id = new.item_id AND a.artifact_type = 'extraction'
                        AND a.created_by = 'user'))
BEGIN
    UPDATE items_fts
       SET title = coalesce(i.title, ''), body = coalesce(json_extract(new.payload, '$.text'), '')
      FROM items i
     WHERE i.id = new.item_id AND items_fts.rowid = i.rowid;
END;

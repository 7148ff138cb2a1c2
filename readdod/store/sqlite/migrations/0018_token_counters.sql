-- Tokens a model server reported, counted where they were spent: on the attempt that
-- asked (and on the chunk, for a long text's map), and in counters that outlive
-- retention, so the daemon's totals never shrink when old runs are pruned.
ALTER TABLE attempts ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;

CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- What older versions recorded (artifacts' meta, the events of failed steps) is put on
-- each run's newest attempt and into the counters.
CREATE TEMP TABLE spent_before AS
 SELECT run_id, sum(p) AS p, sum(c) AS c, sum(k) AS k FROM (
  SELECT run_id, coalesce(json_extract(meta, '$.prompt_tokens'), 0) AS p,
   coalesce(json_extract(meta, '$.completion_tokens'), 0) AS c,
   coalesce(json_extract(meta, '$.cached_tokens'), 0) AS k
   FROM artifacts WHERE created_by = 'system' AND run_id IS NOT NULL
  UNION ALL
  SELECT run_id, coalesce(json_extract(detail, '$.prompt_tokens'), 0),
   coalesce(json_extract(detail, '$.completion_tokens'), 0),
   coalesce(json_extract(detail, '$.cached_tokens'), 0)
   FROM events WHERE kind = 'transition' AND run_id IS NOT NULL
    AND to_status LIKE 'FAILED\_%' ESCAPE '\' AND detail LIKE '%tokens%'
 ) GROUP BY run_id;

UPDATE attempts SET prompt_tokens = s.p, completion_tokens = s.c, cached_tokens = s.k
 FROM spent_before s
 WHERE s.run_id = attempts.run_id AND attempts.attempt_id = (
  SELECT a.attempt_id FROM attempts a WHERE a.run_id = s.run_id
  ORDER BY a.created_at DESC, a.attempt_id DESC LIMIT 1);

INSERT INTO counters (name, value)
 SELECT 'prompt_tokens', coalesce(sum(p), 0) FROM spent_before
 UNION ALL SELECT 'completion_tokens', coalesce(sum(c), 0) FROM spent_before
 UNION ALL SELECT 'cached_tokens', coalesce(sum(k), 0) FROM spent_before;

DROP TABLE spent_before;

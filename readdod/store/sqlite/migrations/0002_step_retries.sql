-- In-step retries (DESIGN §5.1): how often the run's current step was
-- retried and the last error it saw, so `show` can explain a slow item.
ALTER TABLE runs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN last_error_code TEXT;
ALTER TABLE runs ADD COLUMN last_error_message TEXT;

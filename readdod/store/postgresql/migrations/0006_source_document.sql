-- What a text handed in with a capture was read from (a PDF's author, date and page
-- count, as JSON), kept beside the text so the run that extracts it reads both at once
-- (SQLite's migration 0017).
ALTER TABLE item_sources ADD COLUMN document TEXT;

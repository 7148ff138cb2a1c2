-- Health and retention (DESIGN §9) read runs by when they finished and
-- events by age; these indexes keep both cheap on a large database.
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX events_at ON events (at);

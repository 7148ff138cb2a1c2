"""Sources beyond one link typed in: imports of saved links, feeds, the browser.

Each source is a client of the control protocol (or, for feeds, a daemon loop
that captures through the core), and each is idempotent: a capture_id derived
from what it brings makes a second run add nothing.
"""

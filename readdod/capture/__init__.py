"""Sources beyond one link typed at the command line: the browser, imports of saved
links, feeds.

The browser host and imports are clients of the control socket; feeds are polled by
a daemon loop that captures through the core. Each is idempotent: a capture_id
derived from what it brings makes a second run add nothing.
"""

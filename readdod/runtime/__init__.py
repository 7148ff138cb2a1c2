"""What every part of the running process leans on: the clock, ids, log lines, the
in-process event bus, crash points, GC settings, retries inside a step, a DSN's
secrets."""

"""Sources beyond one link typed at the command line: each one a client of the control socket."""

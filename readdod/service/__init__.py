"""The service: the composition root and its place under systemd."""

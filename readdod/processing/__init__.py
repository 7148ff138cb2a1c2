"""Claiming queued items and running each through the pipeline's steps under its
lease."""

"""readdod: turn what you read into what you do."""

__version__ = "0.1.0"

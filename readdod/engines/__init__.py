"""AI engines: text and intent in, artifact payloads out.

Engines know nothing of items, leases or runs (DESIGN §10).
"""

"""``readdod tui``: a live terminal view to triage and act, a client of the socket only.

Textual is an optional extra (``pip install 'readdod[tui]'``): nothing else in
readdod imports this package.
"""

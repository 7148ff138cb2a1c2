"""`readdod eval`: the golden set run through the configured engine's AI steps.

:mod:`readdod.evaluation.checks` judges one page's outputs (pure);
:mod:`readdod.evaluation.runner` loads the bundled pages, runs the engine and
builds the report. The pages live in ``golden/`` inside the package, so the
gate works from an installed wheel too.
"""

"""Small valid payloads for tests that drive the core by hand."""

from __future__ import annotations

from readdod.items.models import (
    ArtifactMeta,
    Card,
    CardSource,
    RenderSpec,
    Score,
    Summary,
    Todo,
    Todos,
)

SUMMARY = Summary(tl_dr="t", key_points=["a", "b", "c"], intent_relevance="r", reading_time_min=1)
SCORE = Score(match_score=50, priority="P2", reasons=["a", "b", "c"], recommendation="skim")
TODOS = Todos(
    items=[
        Todo(title=t, kind=k, estimate_min=5)  # type: ignore[arg-type]
        for t, k in [("w", "output"), ("x", "action"), ("y", "read")]
    ]
)
CARD = Card(
    title="t",
    one_liner="o",
    summary="s",
    key_points=["a", "b", "c"],
    todos=TODOS.items,
    priority="P2",
    match_score=50,
    source=CardSource(),
    render_spec=RenderSpec(template="card", version="1", sections=["todos"]),
)
META = ArtifactMeta(run_id=None, engine="test")

"""Whether a line the local engine wrote is one of a phrase table's templates, filled in."""

from __future__ import annotations

import re

from readdod.engines.local.phrases import TODO_FIELDS, Phrases


def template_re(template: str) -> re.Pattern[str]:
    """``template`` with each ``{placeholder}`` standing for any non-empty text."""
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile("^" + ".+".join(re.escape(p) for p in parts) + "$", re.DOTALL)


def fits(line: str, template: str) -> bool:
    return template_re(template).match(line) is not None


def todo_field(title: str, ph: Phrases) -> str | None:
    """The todo field of ``ph`` that ``title`` is an instance of, if any."""
    return next((f for f in TODO_FIELDS if fits(title, getattr(ph, f))), None)

"""Prompt templates, versioned and chosen by ``ai.profile``.

The files live in ``readdod/engines/templates/`` (package data) as
``<name>[.<profile>].vN.txt``; the versions a step used are recorded in its
artifact's meta (``template_version``).
"""

from __future__ import annotations

import functools
import re
import string
from importlib import resources

import msgspec

from readdod.errors import ConfigError


class Template(msgspec.Struct, frozen=True):
    version: str
    body: string.Template


@functools.cache
def load_template(name: str, profile: str) -> Template:
    """The newest ``<name>[.<profile>].vN.txt``; the default variant when the profile has none."""
    folder = resources.files("readdod.engines") / "templates"
    found: dict[str, tuple[int, str]] = {}
    for entry in folder.iterdir():
        m = re.fullmatch(r"([a-z_]+)(?:\.([a-z]+))?\.v(\d+)\.txt", entry.name)
        if not m or m.group(1) != name:
            continue
        variant = m.group(2) or "default"
        version = int(m.group(3))
        if version > found.get(variant, (0, ""))[0]:
            found[variant] = (version, entry.name)
    chosen = found.get(profile) or found.get("default")
    if chosen is None:
        raise ConfigError(f"no prompt template {name!r} is bundled with readdod")
    file = chosen[1]
    return Template(
        version=file.removesuffix(".txt"),
        body=string.Template((folder / file).read_text("utf-8")),
    )

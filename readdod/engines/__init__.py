"""AI engines: text and intent in, artifact payloads out.

Engines know nothing of items, leases or runs (DESIGN §10).
"""

from pathlib import Path

from readdod.engines.base import Engine
from readdod.settings.config import AIConfig


def make_engine(cfg: AIConfig, state_dir: Path | None = None) -> Engine:
    """The engine ``ai.engine`` names; ``state_dir``: where it may keep what it learns."""
    if cfg.engine == "fixed":
        from readdod.engines.fixed import FixedEngine

        return FixedEngine(cfg.fixed_delay_ms)
    if cfg.engine == "openai":
        from readdod.engines.openai import OpenAIEngine

        return OpenAIEngine(cfg, state_dir=state_dir)
    from readdod.engines.local import LocalEngine

    return LocalEngine()

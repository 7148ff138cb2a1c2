"""AI engines: text and intent in, artifact payloads out.

Engines know nothing of items, leases or runs (DESIGN §10).
"""

from readdod.config import AIConfig
from readdod.engines.base import Engine


def make_engine(cfg: AIConfig) -> Engine:
    """The engine ``ai.engine`` names."""
    if cfg.engine == "fixed":
        from readdod.engines.fixed import FixedEngine

        return FixedEngine(cfg.fixed_delay_ms)
    if cfg.engine == "openai":
        from readdod.engines.openai import OpenAIEngine

        return OpenAIEngine(cfg)
    from readdod.engines.local import LocalEngine

    return LocalEngine()

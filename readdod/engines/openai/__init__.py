"""The ``openai`` engine: any OpenAI-compatible chat-completions server.

``ai.base_url`` points it at OpenAI, Ollama, vLLM, llama.cpp's server or LM
Studio. Each step renders a versioned prompt template (``templates/``,
chosen by ``ai.profile``), asks for JSON matching the payload's generated
JSON Schema (``response_format`` ``json_schema`` where the server supports
it, ``json_object`` plus validation where not), and judges the answer with
:mod:`readdod.rubric`. An invalid answer gets one repair request that tells
the model what was wrong; a second invalid answer fails the step.

Resilience, from the inside out:

- the client never retries by itself (``max_retries=0``) and its timeout is
  below readdod's own deadline for the request (``ai.timeout_s``);
- timeouts, 429 (honouring ``Retry-After``), 5xx and connection errors are
  retried by :mod:`readdod.retrying`, each retry recorded through the step's
  ``on_retry`` hook;
- consecutive connection failures and 5xx open a :class:`CircuitBreaker`;
  while it is open, requests wait for the server instead of failing;
- ``ai.concurrency`` bounds requests in flight and ``ai.rpm`` / ``ai.tpm``
  bound requests and tokens per minute.

Text beyond the context budget (``ai.context_tokens``) is split on paragraph
boundaries; the summary maps over the chunks and reduces their notes, each
chunk's state kept in the step's :class:`ChunkLedger`.

The card is assembled from the run's summary, score and todos; the model
only names it (title and one-liner), so the card cannot drift from what the
earlier steps decided.

One module per concept: :mod:`.templates` (the prompts), :mod:`.answers`
(what is asked for and how an answer is judged), :mod:`.budget` (tokens and
chunks), :mod:`.limits` (rpm/tpm), :mod:`.tally` (what a step cost),
:mod:`.errors` (the library's exceptions as readdod's codes),
:mod:`.transport` (one request through every safeguard), :mod:`.asking`
(one typed answer, one repair) and :mod:`.steps` (the map over chunks, the
card). :class:`OpenAIEngine` composes them into the four steps.
"""

from __future__ import annotations

import os
from pathlib import Path

from readdod import schemas
from readdod.clock import Clock
from readdod.config import AIConfig
from readdod.engines.base import EngineInput, EngineOutput, ModelUsage, current_hooks
from readdod.engines.openai.answers import CardText, ChunkNotes, struct_schema
from readdod.engines.openai.asking import Asker
from readdod.engines.openai.budget import (
    ANSWER_TOKENS,
    RESERVED_TOKENS,
    clip_tokens,
    estimate_tokens,
    split_paragraphs,
)
from readdod.engines.openai.errors import CLIENT_TIMEOUT_RATIO
from readdod.engines.openai.limits import MAX_NAP_S, RateLimiter
from readdod.engines.openai.steps import (
    assemble_card,
    common_values,
    digest_values,
    map_chunks,
    render_notes,
    require_text,
)
from readdod.engines.openai.tally import Tally
from readdod.engines.openai.templates import Template, load_template
from readdod.engines.openai.transport import Transport, display_url
from readdod.errors import ConfigError
from readdod.logging import add_secret, get_logger
from readdod.models import Card, Score, Summary, Todos
from readdod.text import reading_minutes as reading_minutes  # the reading time of every engine

__all__ = [
    "ANSWER_TOKENS",
    "CLIENT_TIMEOUT_RATIO",
    "MAX_NAP_S",
    "RESERVED_TOKENS",
    "CardText",
    "ChunkNotes",
    "OpenAIEngine",
    "RateLimiter",
    "Template",
    "clip_tokens",
    "estimate_tokens",
    "load_template",
    "read_api_key",
    "reading_minutes",
    "split_paragraphs",
]

log = get_logger("readdod.engines.openai")


def read_api_key(env_name: str, environ: dict[str, str] | None = None) -> str | None:
    """The key from ``$<env_name>``, else from ``$CREDENTIALS_DIRECTORY/<env_name>`` (systemd)."""
    env = os.environ if environ is None else environ
    value = env.get(env_name, "").strip()
    if value:
        return value
    creds = env.get("CREDENTIALS_DIRECTORY")
    if creds:
        path = Path(creds) / env_name
        try:
            value = path.read_text("utf-8").strip()
        except OSError:
            return None
        return value or None
    return None


class OpenAIEngine:
    """The :class:`readdod.engines.base.Engine` for OpenAI-compatible servers."""

    name: str = "openai"
    version: str = "1"

    def __init__(
        self,
        cfg: AIConfig,
        *,
        environ: dict[str, str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        if cfg.circuit_failures > cfg.attempts:
            raise ConfigError(
                f"ai.circuit_failures ({cfg.circuit_failures}) must not exceed ai.attempts"
                f" ({cfg.attempts}): a lone item would fail before the circuit could open"
            )
        self.cfg = cfg
        #: The base URL as messages show it: no user:password@, no query.
        self.server = display_url(cfg.base_url)
        key = read_api_key(cfg.api_key_env, environ)
        add_secret(key)
        if key is None:
            log.info("ai.no_api_key", api_key_env=cfg.api_key_env, base_url=self.server)
        self.transport = Transport(cfg, api_key=key, server=self.server, clock=clock)
        self.asker = Asker(self.transport, cfg.profile)
        self.budget = max(cfg.context_tokens - RESERVED_TOKENS, 256)

    def circuit_state(self) -> str:
        return self.transport.circuit.state.value

    def model_usage(self) -> ModelUsage:
        return self.transport.usage

    async def aclose(self) -> None:
        await self.transport.aclose()
        log.info("ai.closed", base_url=self.server)

    def model_for(self, step: str) -> str:
        per_step: str | None = getattr(self.cfg, f"model_{step}", None)
        return per_step or self.cfg.model

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]:
        require_text(inp.text)
        hooks = current_hooks()
        tally = Tally(self.model_for("summary"))
        schema = schemas.json_schema("summary")
        if estimate_tokens(inp.text) <= self.budget:
            payload = await self.asker.ask(
                "summary",
                Summary,
                schema,
                "summary",
                {**common_values(inp), "text": inp.text},
                tally,
                hooks,
            )
        else:
            notes = await map_chunks(self.asker, inp, self.budget, tally, hooks)
            payload = await self.asker.ask(
                "summary",
                Summary,
                schema,
                "summary_reduce",
                {
                    **common_values(inp),
                    "total": str(len(notes)),
                    "reading_time_min": str(reading_minutes(inp.text)),
                    "notes": clip_tokens(render_notes(notes), self.budget),
                },
                tally,
                hooks,
            )
        payload.reading_time_min = reading_minutes(inp.text)
        return tally.output(payload)

    async def score(self, inp: EngineInput, summary: Summary) -> EngineOutput[Score]:
        require_text(inp.text)
        tally = Tally(self.model_for("score"))
        payload = await self.asker.ask(
            "score",
            Score,
            schemas.json_schema("score"),
            "score",
            {**digest_values(inp, summary), "text": clip_tokens(inp.text, self.budget)},
            tally,
            current_hooks(),
        )
        return tally.output(payload)

    async def todos(self, inp: EngineInput, summary: Summary, score: Score) -> EngineOutput[Todos]:
        tally = Tally(self.model_for("todos"))
        payload = await self.asker.ask(
            "todos",
            Todos,
            schemas.json_schema("todos"),
            "todos",
            {
                **digest_values(inp, summary),
                "match_score": str(score.match_score),
                "priority": score.priority,
                "recommendation": score.recommendation,
            },
            tally,
            current_hooks(),
        )
        return tally.output(payload)

    async def card(
        self, inp: EngineInput, summary: Summary, score: Score, todos: Todos
    ) -> EngineOutput[Card]:
        tally = Tally(self.model_for("card"))
        words = await self.asker.ask(
            "card_text",
            CardText,
            struct_schema(CardText),
            "card",
            {
                **digest_values(inp, summary),
                "priority": score.priority,
                "match_score": str(score.match_score),
            },
            tally,
            current_hooks(),
        )
        return tally.output(assemble_card(words, inp, summary, score, todos))

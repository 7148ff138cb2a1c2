"""The ``openai`` engine: any OpenAI-compatible chat-completions server.

``ai.base_url`` points it at OpenAI, Ollama, vLLM, llama.cpp's server or LM
Studio. Each step renders a versioned prompt template (``templates/``,
chosen by ``ai.profile``), asks for JSON matching the payload's generated
JSON Schema in the most structured ``response_format`` the server takes
(:mod:`.formats`), and judges the answer with :mod:`readdod.steps.rubric`. An
invalid answer gets one repair request that tells the model what was wrong
(an answer cut at ``max_tokens`` is asked again, shorter, instead); a second
invalid answer fails the step.

Resilience, from the inside out:

- the client never retries by itself (``max_retries=0``) and its timeout is
  below readdod's own deadline for the request (``ai.timeout_s``);
- timeouts, 429 (honouring ``Retry-After``), 5xx and connection errors are
  retried by :mod:`readdod.runtime.retrying`, each retry recorded through the step's
  ``on_retry`` hook;
- consecutive connection failures and 5xx open a :class:`CircuitBreaker`;
  while it is open, requests wait for the server instead of failing;
- ``ai.concurrency`` bounds requests in flight and ``ai.rpm`` / ``ai.tpm``
  bound requests and tokens per minute.

Text beyond the context budget (``ai.context_tokens``) is split on paragraph
boundaries; the summary maps over the chunks and reduces their notes, each
chunk's state kept in the step's :class:`ChunkLedger`. A server that answers
that a request exceeds its context gets the text split again, smaller (to
the context it names, else half), and the context it names is remembered.

Every request carries ``max_tokens`` (``[ai.max_tokens]``, per step) and is
streamed; the response format is learned from the server's answers and
remembered per server and model in ``model-servers.json`` in the data
directory (:mod:`.formats`, :mod:`.servers`).

The score is made by readdod from the model's judgements (:mod:`.verdict`):
whether the text addresses the intent, with the sentence that shows it, and
which parts of the intent it covers.

The card is assembled from the run's summary, score and todos; the model
only names it (title and one-liner), so the card cannot drift from what the
earlier steps decided.

One module per concept: :mod:`.templates` (the prompts), :mod:`.answers`
(what is asked for and how an answer is judged), :mod:`.budget` (tokens and
chunks), :mod:`.limits` (rpm/tpm), :mod:`.tally` (what a step cost),
:mod:`.errors` (the library's exceptions as readdod's codes), :mod:`.formats`
(what a server accepts, told from its answers), :mod:`.servers` (what was
learned, kept),
:mod:`.transport` (one request through every safeguard), :mod:`.asking`
(one typed answer, one repair) and :mod:`.steps` (the map over chunks, the
card). :class:`OpenAIEngine` composes them into the four steps.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio

from readdod.engines.base import NO_HOOKS, EngineInput, EngineOutput, ModelUsage, StepHooks
from readdod.engines.openai.answers import CardText, ChunkNotes, struct_schema
from readdod.engines.openai.asking import Asker
from readdod.engines.openai.budget import (
    ANSWER_TOKENS,
    RESERVED_TOKENS,
    clip_tokens,
    estimate_tokens,
    split_paragraphs,
)
from readdod.engines.openai.errors import CLIENT_TIMEOUT_RATIO, ContextExceeded
from readdod.engines.openai.limits import MAX_NAP_S, RateLimiter
from readdod.engines.openai.servers import FILENAME, ServerMemory
from readdod.engines.openai.steps import (
    assemble_card,
    common_values,
    digest_values,
    map_chunks,
    own_output_todo,
    render_notes,
    require_text,
)
from readdod.engines.openai.tally import Tally
from readdod.engines.openai.templates import Template, load_template
from readdod.engines.openai.transport import CLOSE_S, CompletionClient, display_url
from readdod.engines.openai.verdict import ScoreJudgement, combine
from readdod.errors import ConfigError, StepError
from readdod.items.models import Card, Score, Summary, Todos
from readdod.runtime.clock import Clock
from readdod.runtime.logging import add_secret, get_logger
from readdod.settings.config import AIConfig
from readdod.steps import rubric
from readdod.text import reading_minutes as reading_minutes  # the reading time of every engine
from readdod.wire import schemas

__all__ = [
    "ANSWER_TOKENS",
    "CLIENT_TIMEOUT_RATIO",
    "MAX_NAP_S",
    "RESERVED_TOKENS",
    "CardText",
    "ChunkNotes",
    "OpenAIEngine",
    "RateLimiter",
    "ServerMemory",
    "Template",
    "budget_for",
    "clip_tokens",
    "estimate_tokens",
    "load_template",
    "read_api_key",
    "reading_minutes",
    "split_paragraphs",
]

log = get_logger("readdod.engines.openai")
T = TypeVar("T")


#: How often one step splits its text smaller after the server said it does not fit.
RESPLITS: Final = 3


def budget_for(context_tokens: int) -> int:
    """Tokens of text one request may carry in a context of ``context_tokens``: the rest is
    kept for the prompt, the schema and the answer."""
    return max(context_tokens - RESERVED_TOKENS, 256)


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
    version: str = "2"

    def __init__(
        self,
        cfg: AIConfig,
        *,
        environ: dict[str, str] | None = None,
        clock: Clock | None = None,
        state_dir: Path | None = None,
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
        #: What this server took before (format, context), kept in the data directory.
        self.memory = ServerMemory(state_dir / FILENAME if state_dir is not None else None)
        self.transport = CompletionClient(
            cfg, api_key=key, server=self.server, clock=clock, memory=self.memory
        )
        self.asker = Asker(self.transport, cfg.profile, cfg.max_tokens)
        #: The context each model is known to have, once smaller than ai.context_tokens.
        self.contexts: dict[str, int] = {}

    @property
    def budget(self) -> int:
        """The text budget of ``ai.model`` in tokens."""
        return budget_for(self.context_of(self.cfg.model))

    def context_of(self, model: str) -> int:
        if model not in self.contexts:
            learned = self.memory.get(self.server, model).context_tokens
            self.contexts[model] = min(self.cfg.context_tokens, learned or self.cfg.context_tokens)
        return self.contexts[model]

    def circuit_state(self) -> str:
        return self.transport.circuit.state.value

    def model_usage(self) -> ModelUsage:
        return self.transport.usage

    async def aclose(self) -> None:
        """Close the client's connections; shielded and bounded, so a cancelled caller
        (a deadline, a shutdown) still closes them."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_S):
            await self.transport.aclose()
        log.info("ai.closed", base_url=self.server)

    def model_for(self, step: str) -> str:
        per_step: str | None = getattr(self.cfg, f"model_{step}", None)
        return per_step or self.cfg.model

    async def _fitted(self, model: str, run: Callable[[int], Awaitable[T]]) -> T:
        """``run(budget)``, with the text split smaller each time the server says the
        request exceeds its context."""
        for _ in range(RESPLITS):
            context = self.context_of(model)
            try:
                return await run(budget_for(context))
            except ContextExceeded as exc:
                said = exc.server_context
                smaller = said if said is not None and said < context else context // 2
                if budget_for(smaller) >= budget_for(context):
                    raise
                log.warning(
                    "ai.context_exceeded",
                    base_url=self.server,
                    model=model,
                    context_tokens=context,
                    server_context=said,
                    next_context=smaller,
                )
                self.contexts[model] = smaller
                if said is not None:
                    self.memory.remember(self.server, model, context=said)
        return await run(budget_for(self.context_of(model)))

    @staticmethod
    async def _charged(tally: Tally, step: Awaitable[T]) -> T:
        """``step``'s result; if it fails, its error carries the tokens spent until then."""
        try:
            return await step
        except StepError as exc:
            tally.charge(exc)
            raise

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Summary]:
        require_text(inp.text)
        model = self.model_for("summary")
        tally = Tally(model)
        schema = schemas.json_schema("summary")
        computed = {"reading_time_min": reading_minutes(inp.text)}

        async def run(budget: int) -> Summary:
            if estimate_tokens(inp.text) <= budget:
                return await self.asker.ask(
                    "summary",
                    Summary,
                    schema,
                    "summary",
                    common_values(inp),
                    tally,
                    hooks,
                    material=inp.text,
                    computed=computed,
                )
            notes = await map_chunks(self.asker, inp, budget, tally, hooks)
            return await self.asker.ask(
                "summary",
                Summary,
                schema,
                "summary_reduce",
                {**common_values(inp), "total": str(len(notes))},
                tally,
                hooks,
                material=clip_tokens(render_notes(notes), budget),
                heading="Notes",
                computed=computed,
            )

        payload = await self._charged(tally, self._fitted(model, run))
        payload.reading_time_min = reading_minutes(inp.text)
        return tally.output(payload)

    async def _about_text(
        self,
        step: str,
        kind: str,
        typ: type[T],
        schema: dict[str, Any],
        values: dict[str, str],
        inp: EngineInput,
        hooks: StepHooks,
        mend: Callable[[Any], Any] | None = None,
    ) -> EngineOutput[T]:
        """One answer about the article (clipped to the budget), the run's shared prefix."""
        model = self.model_for(step)
        tally = Tally(model)

        async def run(budget: int) -> T:
            return await self.asker.ask(
                kind,
                typ,
                schema,
                step,
                values,
                tally,
                hooks,
                material=clip_tokens(inp.text, budget),
                mend=mend,
            )

        return tally.output(await self._charged(tally, self._fitted(model, run)))

    async def score(
        self, inp: EngineInput, summary: Summary, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Score]:
        """The model judges (does the text address the intent, which parts it covers, the
        sentence that shows it), then answers one short question without the article (is
        the text about the intent's subject?); readdod turns the answers into the score
        (:mod:`.verdict`), so a small model's number is never copied from its prompt."""
        require_text(inp.text)
        model = self.model_for("score")
        tally = Tally(model)

        async def run(budget: int) -> ScoreJudgement:
            return await self.asker.ask(
                "score",
                ScoreJudgement,
                struct_schema(ScoreJudgement),
                "score",
                digest_values(inp, summary),
                tally,
                hooks,
                material=clip_tokens(inp.text, budget),
            )

        judged = await self._charged(tally, self._fitted(model, run))
        # Asked after the judgements: a server that keeps one prompt in its cache
        # (llama-cpp-python) reads the article again for the todos.
        rel = await self._charged(tally, self.asker.relevance(inp, tally, hooks))
        return tally.output(combine(judged, inp.text, reading_minutes(inp.text), rel))

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Todos]:
        values = {
            **digest_values(inp, summary),
            "match_score": str(score.match_score),
            "priority": score.priority,
            "recommendation": score.recommendation,
        }
        own = own_output_todo(inp, summary)
        return await self._about_text(
            "todos",
            "todos",
            Todos,
            schemas.json_schema("todos"),
            values,
            inp,
            hooks,
            lambda todos: rubric.mend_todos(todos, own),
        )

    async def card(
        self,
        inp: EngineInput,
        summary: Summary,
        score: Score,
        todos: Todos,
        *,
        hooks: StepHooks = NO_HOOKS,
    ) -> EngineOutput[Card]:
        values = {
            **digest_values(inp, summary),
            "priority": score.priority,
            "match_score": str(score.match_score),
        }
        out = await self._about_text(
            "card", "card_text", CardText, struct_schema(CardText), values, inp, hooks
        )
        card = assemble_card(out.payload, inp, summary, score, todos)
        return EngineOutput(
            payload=card,
            template_version=out.template_version,
            model=out.model,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            cached_tokens=out.cached_tokens,
            latency_ms=out.latency_ms,
            attempts=out.attempts,
        )

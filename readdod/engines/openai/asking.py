"""Asking the model for one typed answer: the prompt, the request, one repair.

Every prompt has the same long part first, the system text and the article
(:func:`Asker.messages`), and the step's own instruction and schema after it,
so a server with a prompt cache (llama.cpp, vLLM, OpenAI) reads the article
once per run. An answer that fails
:func:`~readdod.engines.openai.answers.judge` is sent back once with what was
wrong; an answer cut off at ``max_tokens`` is not sent back (it would only
fill the context again): the question is asked again with a request to be
brief. A second wrong answer fails the step.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import Any, TypeVar

from readdod.engines.base import EngineInput, StepHooks
from readdod.engines.openai.answers import judge, model_schema, problem_list, still_invalid
from readdod.engines.openai.tally import Tally
from readdod.engines.openai.templates import load_template
from readdod.engines.openai.transport import CompletionClient, Messages
from readdod.engines.openai.verdict import Relevance, lifted, passage, relevance
from readdod.errors import AIError
from readdod.runtime import retrying
from readdod.runtime.logging import get_logger
from readdod.settings.config import AnswerTokens

log = get_logger("readdod.engines.openai")
#: The relevance question's answer is one word; its likeliest first tokens are asked for.
RELEVANCE_TOKENS = 2
RELEVANCE_LOGPROBS = 10
#: The short questions asked without the article (templates of these names).
QUESTIONS = ("relevance", "helps")
#: The empty text each question is also asked about: the model's lean towards "yes".
EMPTY = "N/A"
#: Answers about the empty text kept per (model, question, goal): a backlog shares goals.
PRIORS_KEPT = 512
T = TypeVar("T")


class Asker:
    """Typed answers from one server, in one prompt profile (``ai.profile``)."""

    def __init__(self, transport: CompletionClient, profile: str, max_tokens: AnswerTokens) -> None:
        self.transport = transport
        self.profile = profile
        self.max_tokens = max_tokens
        self._priors: dict[tuple[str, str, str], Relevance] = {}

    def messages(
        self, template: str, values: dict[str, str], material: str, heading: str, asked: str
    ) -> tuple[Messages, str]:
        """The prompt: system text and article first (shared by the run's steps), then the
        step's instruction and the schema; and the step template's version."""
        system = load_template("system", self.profile)
        article = load_template("article", self.profile)
        task = load_template(template, self.profile)
        answer = load_template("answer", self.profile)
        prefix = article.body.substitute(
            intent=values["intent"], title=values["title"], heading=heading, material=material
        )
        user = (
            prefix.rstrip("\n")
            + "\n\n---\n"
            + task.body.substitute(values).rstrip("\n")
            + "\n"
            + answer.body.substitute(schema=asked)
        )
        return [
            {"role": "system", "content": system.body.template.strip()},
            {"role": "user", "content": user},
        ], task.version

    async def ask(
        self,
        kind: str,
        typ: type[T],
        schema: dict[str, Any],
        template: str,
        values: dict[str, str],
        tally: Tally,
        hooks: StepHooks,
        on_retry: retrying.OnRetry | None = None,
        on_attempt: retrying.OnAttempt | None = None,
        *,
        material: str,
        heading: str = "Text",
        computed: dict[str, Any] | None = None,
        mend: Callable[[Any], Any] | None = None,
    ) -> T:
        """Ask for one ``typ``: the request, its retries, one repair, the typed failure.

        ``material`` is what the prompt is about (the article, a chunk, notes);
        ``computed`` fields are readdod's own and are not asked for; ``mend`` mends an
        answer's near misses before it is judged (:func:`readdod.steps.rubric.mend_todos`).
        """
        asked = model_schema(schema, computed or {})
        messages, version = self.messages(
            template, values, material, heading, json.dumps(asked, ensure_ascii=False)
        )
        tally.templates.append(version)
        max_tokens: int = getattr(self.max_tokens, kind)
        problems: list[str] = []
        parsed = True
        cut = False
        for turn in range(2):
            answer = await self.transport.complete(
                tally, messages, kind, asked, max_tokens, hooks, on_retry, on_attempt
            )
            payload, problems, parsed = judge(
                kind, typ, answer.content, schema=schema, computed=computed, mend=mend
            )
            if payload is not None and not problems:
                return payload
            cut = answer.finish_reason == "length"
            if cut:
                problems = [
                    f"the answer was cut off at max_tokens ({max_tokens} tokens)",
                    *problems,
                ]
            if turn == 0:
                log.info("ai.repair", kind=kind, truncated=cut, problems=problems[:5])
                if cut:
                    note = load_template("truncated", self.profile)
                    tally.templates.append(note.version)
                    first = messages[:2]
                    messages = [
                        first[0],
                        {
                            "role": "user",
                            "content": first[1]["content"]
                            + note.body.substitute(max_tokens=max_tokens),
                        },
                    ]
                else:
                    repair = load_template("repair", self.profile)
                    tally.templates.append(repair.version)
                    messages = [
                        *messages,
                        {"role": "assistant", "content": answer.content},
                        {
                            "role": "user",
                            "content": repair.body.substitute(problems=problem_list(problems)),
                        },
                    ]
        raise still_invalid(kind, problems, parsed, f"ai.max_tokens.{kind}" if cut else None)

    async def relevance(self, inp: EngineInput, tally: Tally, hooks: StepHooks) -> Relevance | None:
        """The short questions without the article (is the text about the intent's subject,
        would it help with it?), each asked about the text's title and passage
        (:func:`.verdict.passage`) and about an empty text. One token each, with its
        probability when the server gives it. A server that fails the questions, or
        answers neither word, leaves the score to the judgements (None)."""
        goal = " ".join(inp.intent.split())
        answers: list[tuple[Relevance, Relevance | None]] = []
        for name in QUESTIONS:
            template = load_template(name, self.profile)
            tally.templates.append(template.version)
            said = await self._probe(
                template.body, inp.title or "", passage(inp.text, goal), goal, tally, hooks
            )
            if said is None:
                continue
            key = (tally.model, template.version, goal)
            prior = self._priors.get(key)
            if prior is None and said.graded:
                prior = await self._probe(template.body, EMPTY, EMPTY, goal, tally, hooks)
                if prior is not None:
                    if len(self._priors) >= PRIORS_KEPT:
                        del self._priors[next(iter(self._priors))]
                    self._priors[key] = prior
            answers.append((said, prior))
        return lifted(answers)

    async def _probe(
        self,
        question: string.Template,
        title: str,
        passage: str,
        goal: str,
        tally: Tally,
        hooks: StepHooks,
    ) -> Relevance | None:
        try:
            answer = await self.transport.complete(
                tally,
                [
                    {
                        "role": "user",
                        "content": question.substitute(title=title, passage=passage, goal=goal),
                    }
                ],
                "relevance",
                {},
                RELEVANCE_TOKENS,
                hooks,
                None,
                logprobs=RELEVANCE_LOGPROBS,
            )
        except AIError as exc:
            log.info("ai.relevance_unanswered", error_code=exc.error_code, error=exc.message[:300])
            return None
        return relevance(answer.first_tokens, answer.content)

"""Asking the model for one typed answer: the prompt, the request, one repair.

The system and user prompts are rendered from the profile's templates; an
answer that fails :func:`~readdod.engines.openai.answers.judge` is sent back
once with what was wrong, and a second wrong answer fails the step.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from readdod import retrying
from readdod.engines.base import StepHooks
from readdod.engines.openai.answers import judge, problem_list, still_invalid
from readdod.engines.openai.tally import Tally
from readdod.engines.openai.templates import load_template
from readdod.engines.openai.transport import Messages, Transport
from readdod.logging import get_logger

log = get_logger("readdod.engines.openai")
T = TypeVar("T")


class Asker:
    """Typed answers from one server, in one prompt profile (``ai.profile``)."""

    def __init__(self, transport: Transport, profile: str) -> None:
        self.transport = transport
        self.profile = profile

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
    ) -> T:
        """Ask for one ``typ``: the request, its retries, one repair, the typed failure."""
        system = load_template("system", self.profile)
        user = load_template(template, self.profile)
        tally.templates.append(user.version)
        messages: Messages = [
            {
                "role": "system",
                "content": system.body.substitute(
                    artifact=kind, schema=json.dumps(schema, ensure_ascii=False)
                ),
            },
            {"role": "user", "content": user.body.substitute(values)},
        ]
        problems: list[str] = []
        parsed = True
        for turn in range(2):
            content = await self.transport.complete(
                tally, messages, kind, schema, hooks, on_retry, on_attempt
            )
            payload, problems, parsed = judge(kind, typ, content)
            if payload is not None and not problems:
                return payload
            if turn == 0:
                repair = load_template("repair", self.profile)
                tally.templates.append(repair.version)
                log.info("ai.repair", kind=kind, problems=problems[:5])
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": repair.body.substitute(problems=problem_list(problems)),
                    },
                ]
        raise still_invalid(kind, problems, parsed)

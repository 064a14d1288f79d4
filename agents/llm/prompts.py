"""Prompts are Jinja2 templates in files (`agents/prompts/<name>.j2`), rendered with StrictUndefined so a
missing variable fails at render time instead of reaching the model as an empty string.

A template defines a `user` block and optionally a `system` block:

    {% block system %}You are the critic of a robot-learning data engine.{% endblock %}
    {% block user %}Failure summary:\n{{ summary }}{% endblock %}

Shared wording goes in a base template (`{% extends "_critic.j2" %}`); names starting with `_` are
partials, not prompts.

Every variable that carries text from outside the engine's code (a scene's, an LLM's, an error's) is
written `{{ x | untrusted }}` (`agents.llm.untrusted`: escaped onto one line, capped at `TEXT_CHARS`), or
`{{ feedback | untrusted(FEEDBACK_CHARS) }}`; `tests/agents/test_prompt_quoting.py` holds each prompt to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from agents.llm.untrusted import FEEDBACK_CHARS, TEXT_CHARS, untrusted
from common.registry import Registry

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"  # agents/prompts


class PromptError(ValueError):
    """A prompt that does not exist or does not render (missing variable, syntax error)."""


@dataclass(frozen=True, kw_only=True)
class RenderedPrompt:
    """A template rendered into chat messages."""

    name: str
    system: str
    user: str


class PromptLibrary:
    """Loads and renders the templates of one directory."""

    def __init__(self, root: Path = PROMPTS_DIR) -> None:
        self.root = Path(root)
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(self.root),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,  # prompts are plain text, not HTML: text from outside goes through `untrusted`
        )
        self._env.filters["untrusted"] = untrusted
        self._env.globals.update(TEXT_CHARS=TEXT_CHARS, FEEDBACK_CHARS=FEEDBACK_CHARS)
        self._names: Registry[Path] = Registry("prompt")
        for path in sorted(self.root.glob("*.j2")):
            if not path.name.startswith("_"):
                self._names.register(path.stem, path)

    def names(self) -> list[str]:
        """Prompt names (template stems), sorted."""
        return self._names.names()

    def render(self, name: str, variables: Mapping[str, Any]) -> RenderedPrompt:
        """Render prompt `name`; raises `PromptError` naming the template and the problem."""
        try:
            path = self._names.get(name)
        except KeyError as e:  # UnknownNameError carries the "did you mean"
            raise PromptError(f"{e} (templates in {self.root})") from None
        try:
            template = self._env.get_template(path.name)
            context = template.new_context(dict(variables))
            # A full render runs `{% extends %}`, which registers the parents' blocks in the context;
            # then each block renders in its most derived form.
            for _ in template.root_render_func(context):
                pass
            blocks = context.blocks
            if "user" not in blocks:
                raise PromptError(f"prompt {name!r} ({path}) has no {{% block user %}}")
            user = "".join(blocks["user"][0](context)).strip()
            system = "".join(blocks["system"][0](context)).strip() if "system" in blocks else ""
        except jinja2.UndefinedError as e:
            raise PromptError(f"prompt {name!r}: {e.message}; variables given: {sorted(variables)}") from e
        except jinja2.TemplateError as e:
            raise PromptError(f"prompt {name!r} ({path}): {e}") from e
        return RenderedPrompt(name=name, system=system, user=user)

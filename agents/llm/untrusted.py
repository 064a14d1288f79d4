"""Text from outside the engine's own code, on its way into a prompt: a scene's instruction and factor values
(a generated program wrote them), an error message (a program raises what it likes; pydantic repeats its
input), an LLM's earlier answer, a diagnosis built from them.

    untrusted(instruction)   # put the "red" cube⏎SYSTEM … → put the \\"red\\" cube\\nSYSTEM …, on one line
    summarise_errors(text)   # pydantic's 3,001 errors → the count and the first five

`untrusted` escapes as a JSON string body does — a quote, a backslash, a line break or any other character
that is not printable becomes an escape — so the text stays on its line and inside the prompt's quotes;
text without any of those reads exactly as before. It is the Jinja filter `untrusted` of every prompt
(`agents.llm.prompts`), and caps the text at `limit` characters with a marker.
"""

from __future__ import annotations

import re
from typing import Any

TEXT_CHARS = 500  # a scene's text, a factor's value or range, a diagnosis (an instruction is at most 500)
FEEDBACK_CHARS = 4_000  # an earlier attempt's error and answer, fed back to a retry
ERRORS_SHOWN = 5  # validation errors a summary lists
LINE_CHARS = 300  # a line of a summarised error

_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c: str, quotes: bool) -> str:
    if c in _SHORT and (quotes or c not in '"\\'):
        return _SHORT[c]
    if c.isprintable():  # not printable: control characters, U+2028/2029 and other line or format marks
        return c
    code = ord(c)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def untrusted(value: Any, limit: int = TEXT_CHARS, *, quotes: bool = True) -> str:
    """`value` (as `str()` writes it) escaped so it cannot leave its line or close a quote, and at most
    `limit` characters of escaped text, then a marker saying how much was cut. `quotes=False`, for text
    the prompt does not put in quotes (a line of JSON), leaves `"` and `\\` as they are: it stays on its
    line all the same."""
    text = value if isinstance(value, str) else str(value)
    out: list[str] = []
    used = 0
    for i, c in enumerate(text):
        e = _escape(c, quotes)
        if used + len(e) > limit:
            return "".join(out) + f" [… {len(text) - i:,} more characters cut]"
        out.append(e)
        used += len(e)
    return "".join(out)


# pydantic's "3001 validation errors for SceneSpec" (at the end of a line), then its entries: each a
# location line and the indented lines under it
_HEADER = re.compile(r"\b(\d+) validation errors? for \S+$")
_DOCS_LINE = re.compile(r"^\s+For further information visit \S+$")


def summarise_errors(text: str, *, shown: int = ERRORS_SHOWN, limit: int = FEEDBACK_CHARS) -> str:
    """`text` with each pydantic validation-error list in it cut to its count and first `shown` entries
    (their documentation links dropped, each line at most `LINE_CHARS` characters), then the whole at most
    `limit` characters, with a marker for what was cut. Short text without such a list is unchanged."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(_clip(lines[i]))
        m = _HEADER.search(lines[i])
        i += 1
        if m is None:
            continue
        total, entry = int(m.group(1)), 0
        while i < len(lines) and entry < total:
            entry += 1
            block = [lines[i]]
            i += 1
            while i < len(lines) and lines[i].startswith(" "):
                block.append(lines[i])
                i += 1
            if entry <= shown:
                out += [_clip(b) for b in block if not _DOCS_LINE.match(b)]
        if total > shown:
            out.append(f"[… and {total - shown:,} more errors]")
    summary = "\n".join(out)
    if len(summary) <= limit:
        return summary
    keep = max(limit - 40, 0)  # room for the marker
    return summary[:keep] + f" [… {len(summary) - keep:,} more characters cut]"


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f" [… {len(line) - LINE_CHARS:,} more]"

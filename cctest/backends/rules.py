"""A deterministic, model-free backend whose completions really depend on the prompt.

It exists for tests and demos of the pipeline: its completion returns the sum of the parameters
of the innermost function being written, using the names the prompt uses. A renamed mutant thus
gets a completion with the renamed identifiers, and only de-mutation makes it agree with the
original's. Substrings listed in ``fragile`` make it answer differently (as a real model's
completion can change under a meaning-preserving edit), which lets a test cause an outlier.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

from .base import Backend, Outcome

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+\w+[ \t]*\((.*?)\)", re.M | re.S)


def _params(signature: str) -> list[str]:
    names = []
    depth = 0
    current = ""
    for ch in signature:  # split on top-level commas only (defaults may contain calls)
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += ch
    names.append(current)
    out = []
    for n in names:
        m = re.match(r"\s*\**\s*([A-Za-z_]\w*)", n)
        if m and m.group(1) not in ("self", "cls"):
            out.append(m.group(1))
    return out


class RuleBackend(Backend):
    """Completes ``return <param> + <param> ...`` for the last function in the prompt."""

    name = "rules"

    def __init__(self, fragile: Sequence[str] = (), fail_on: Sequence[str] = ()) -> None:
        self.fragile = tuple(fragile)
        self.fail_on = tuple(fail_on)
        # the last batches received, for tests of batching; bounded, as a long-running language
        # server on this backend would otherwise keep every prompt it ever saw
        self.calls: deque[list[str]] = deque(maxlen=64)

    @classmethod
    def from_spec(cls, spec: str | None) -> RuleBackend:
        """Build from the ``model`` setting, e.g. ``"fragile=total,acc;fail_on=BOOM"`` (None: plain).

        This lets a client of the language server (a test, a demo) cause outliers and failures.
        """
        options: dict[str, tuple[str, ...]] = {"fragile": (), "fail_on": ()}
        for part in (spec or "").split(";"):
            name, _, values = part.partition("=")
            if name.strip() in options:
                options[name.strip()] = tuple(v for v in values.split(",") if v)
        return cls(fragile=options["fragile"], fail_on=options["fail_on"])

    def describe(self) -> str:
        extra = [f"fragile={','.join(self.fragile)}"] if self.fragile else []
        extra += [f"fail_on={','.join(self.fail_on)}"] if self.fail_on else []
        return "rules" + (f" ({'; '.join(extra)})" if extra else "")

    def complete_one(self, prompt: str) -> str:
        matches = list(_DEF.finditer(prompt))
        if not matches:
            return "pass\n"
        indent = matches[-1].group(1)
        params = _params(matches[-1].group(2))
        expr = " + ".join(params) if params else "None"
        if any(s in prompt for s in self.fragile):
            expr = f"{params[-1] if params else 'None'} * 2  # fragile"
        last = prompt.rsplit("\n", 1)[-1]
        if last.strip() == "":
            # at the start of a line: a whole statement, indented into the function body
            return f"return {expr}\n" if last else f"{indent}    return {expr}\n"
        if last.rstrip().endswith("return"):
            return f" {expr}\n"
        return f"\n{indent}    return {expr}\n"

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        from ..errors import BackendError

        self.calls.append(list(prompts))
        out: list[Outcome] = []
        for p in prompts:
            if any(s in p for s in self.fail_on):
                out.append(BackendError("the rule backend was told to fail on this prompt."))
            else:
                out.append(self.complete_one(p))
        return out

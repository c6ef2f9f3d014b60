"""Typed settings shared by the CLI, the language server and the benchmarks.

One dataclass, ``Settings``, with snake_case fields. Each field is described once, by the
``Spec`` in its metadata: its type, whether it may be null, its allowed values or bounds, its
description, and whether changing it rebuilds the backend. Everything else derives from that
description: validation here, the language server's settings table (``lsp_server/settings.py``),
the VS Code extension's ``package.json`` and the settings table in ``docs/lsp.md`` (both written
by ``tools/sync_settings.py``).

``Settings.from_mapping`` accepts the camelCase names the language server receives on the wire
(``maxNewTokens``) as well as snake_case, validates every value, and returns the settings plus
one message per rejected value (the rejected value keeps its default), so a caller can warn and
carry on.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError, UnknownSchemeError

BACKENDS = ("hf", "http", "rules")
PROVIDERS = ("openai", "ollama", "tgi")
MODES = ("repair", "monitor", "off")
DTYPES = ("auto", "float32", "float16", "bfloat16")
SCOPES = ("line", "block", "auto")

_T = TypeVar("_T")


def default_defect_log() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cctest")) / "defects.sqlite3"


def _scheme_names() -> tuple[str, ...]:
    from .mutators import SCHEMES  # late: the mutators pull in libcst

    return tuple(SCHEMES)


def _parse_schemes(raw: Sequence[str]) -> tuple[str, ...]:
    from .mutators import canonical_schemes  # the one parser: any case, `cctest mutate`'s sentence

    return canonical_schemes(raw)


def _parse_fim(value: str) -> str:
    from .backends.fim import parse_fim  # late: the backends package imports this module

    return parse_fim(value)


def _at_most_the_cores(threads: int) -> int:
    """``threads`` when the machine has that many CPU cores (torch hangs or crashes far beyond)."""
    cores = os.cpu_count() or 1
    if threads > cores:
        raise ConfigError(
            f"{threads} is more than this machine's {cores} CPU cores; give 0 (torch's default) to {cores}."
        )
    return threads


@dataclass(frozen=True)
class Spec:
    """The one description of a setting.

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``tuple`` (a list of strings);
    ``choices`` the allowed values (of the items, for a list), or a function that returns them;
    ``minimum``/``maximum`` bound a number (``exclusive_minimum``: the minimum itself is not
    allowed); ``path``: a string that names a file, ``~`` expanded; ``parse``: the value's own
    parser, given a value of the right kind, in place of the ``choices`` check (it raises its own
    one-sentence error); ``backend``: a change to it re-creates the backend (and, for ``hf``,
    reloads the model).

    The command line's option for it (``cctest.commands._common.add_setting``) reads the rest:
    ``flag`` its long option (default ``--`` and the name with dashes; its destination follows
    from it, as argparse derives it), ``short`` a one-letter spelling beside it (``-k``),
    ``metavar`` the value's name in ``--help``, and ``cli_help`` its one line in ``--help``
    (``{default}`` there is the default; None: the option has no help line).
    """

    kind: type
    description: str
    nullable: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    path: bool = False
    parse: Callable[[Any], Any] | None = None
    backend: bool = True
    flag: str | None = None
    short: str | None = None
    metavar: str | None = None
    cli_help: str | None = None

    def option_strings(self, name: str) -> list[str]:
        """The command line's spellings of the setting ``name``.

        >>> Spec(int, "", short="-k").option_strings("mutants")
        ['-k', '--mutants']
        >>> Spec(str, "").option_strings("model_name")
        ['--model-name']
        """
        flag = self.flag or "--" + name.replace("_", "-")
        return [self.short, flag] if self.short else [flag]

    def allowed(self) -> tuple[str, ...]:
        """The allowed values (for a list: of its items); empty when any value of the kind is."""
        return self.choices() if callable(self.choices) else self.choices

    def json_type(self) -> str:
        """The JSON-schema type(s), ``|``-separated: ``"integer"``, ``"string|null"``.

        >>> Spec(str, "", nullable=True).json_type()
        'string|null'
        """
        names = {str: "string", int: "integer", float: "number", bool: "boolean", tuple: "array"}
        return names[self.kind] + ("|null" if self.nullable else "")

    def what(self) -> str:
        """What a valid value is, in words (the end of an error message).

        >>> Spec(int, "", minimum=0, maximum=64).what()
        'an integer from 0 to 64'
        >>> Spec(float, "", minimum=0, exclusive_minimum=True).what()
        'a number above 0'
        >>> Spec(float, "", minimum=0, maximum=1, exclusive_minimum=True).what()
        'a number above 0 and at most 1'
        """
        allowed = self.allowed()
        if self.kind is tuple:
            return "a list of " + (f"names from {', '.join(allowed)}" if allowed else "strings")
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "one of " + ", ".join(allowed) if allowed else "a non-empty string"
        what = "an integer" if self.kind is int else "a number"
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            if self.exclusive_minimum:
                return f"{what} above {low:g} and at most {high:g}"
            return f"{what} from {low:g} to {high:g}"
        if low is not None:
            return f"{what} {'above' if self.exclusive_minimum else 'of at least'} {low:g}"
        return what if high is None else f"{what} of at most {high:g}"

    def validate(self, raw: Any) -> Any:
        """``raw`` as this setting's value; ``ConfigError`` (one sentence) when it is not valid."""
        if raw is None and self.nullable:
            return None
        if self.kind is str and self.nullable and raw == "":
            return None
        if self.parse is not None and self._accepts(raw, choices=False):
            return self.parse(raw)
        if not self._accepts(raw):
            suffix = " or null" if self.nullable else ""
            raise ConfigError(f"{raw!r} is not {self.what()}{suffix}.")
        if self.kind is tuple:
            return tuple(raw)
        if self.kind is float:
            return float(raw)
        if self.path:
            return os.path.expanduser(raw)
        return raw

    def _accepts(self, raw: Any, *, choices: bool = True) -> bool:
        allowed = self.allowed() if choices else ()
        if self.kind is tuple:
            items = isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw)
            return items and (not allowed or all(x in allowed for x in raw))
        if self.kind is bool:
            return isinstance(raw, bool)
        if self.kind is str:
            return isinstance(raw, str) and raw != "" and (not allowed or raw in allowed)
        numbers = (int,) if self.kind is int else (int, float)
        if not isinstance(raw, numbers) or isinstance(raw, bool) or not math.isfinite(raw):
            return False  # nan passes every comparison, and inf is no setting
        low, high = self.minimum, self.maximum
        if low is not None and (raw <= low if self.exclusive_minimum else raw < low):
            return False
        return high is None or raw <= high


def setting(default: _T, kind: type, description: str, **spec: Any) -> _T:
    """A ``Settings`` field: its default and its ``Spec``."""
    meta = {"spec": Spec(kind, description, **spec)}
    return dataclasses.field(default=default, metadata=meta)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Settings:
    backend: str = setting(
        "hf",
        str,
        "Where completions come from: `hf` (a local transformers model; default: the bundled one), "
        "`http` (a completion server), `rules` (a deterministic model-free backend for demos and tests).",
        choices=BACKENDS,
        cli_help=(
            "hf: a local transformers model (default: the bundled one); http: a completion server; "
            "rules: a model-free test backend"
        ),
    )
    model: str | None = setting(
        None,
        str,
        "`hf`: a model directory (null: the bundled model); `http`: the server's base URL; "
        "`rules`: optionally `fragile=WORD,...;fail_on=WORD,...` (prompts containing a fragile word "
        "get a different completion, ones containing a fail_on word fail), to demonstrate outliers.",
        nullable=True,
        cli_help="model directory (hf) or server URL (http); default: the bundled model",
    )
    provider: str = setting(
        "openai",
        str,
        "`http` only: the API flavour (`openai` /v1/completions, `ollama`, `tgi`).",
        choices=PROVIDERS,
        cli_help="HTTP API flavour (default: {default})",
    )
    model_name: str | None = setting(
        None,
        str,
        "`http` only: the `model` field some servers require.",
        nullable=True,
        cli_help="the model name some servers require (http)",
    )
    api_key_env: str = setting(
        "CCTEST_API_KEY",
        str,
        "`http` only: the environment variable (of the server process) holding the API key; "
        "the key itself is never a setting.",
        cli_help="environment variable holding the API key (http)",
    )
    schemes: tuple[str, ...] = setting(
        (),
        tuple,
        "Mutation schemes to use (empty: all).",
        choices=_scheme_names,
        parse=_parse_schemes,
        backend=False,
        flag="--scheme",
        metavar="NAME",
        cli_help="restrict to a mutation scheme, in any case (repeatable; default: all)",
    )
    mutants: int = setting(
        10,
        int,
        "k, the number of mutants per request.",
        minimum=0,
        maximum=64,
        backend=False,
        short="-k",
        cli_help="number of mutants (default {default})",
    )
    mutant_pool: int = setting(
        1,
        int,
        "Draw up to this many times k candidate mutants and keep the k whose first change is nearest "
        "the cursor (each scheme family's nearest first, so the families stay): the rows then share "
        "more of the prompt and a request costs less, but on HumanEval the verdicts' F1 drops "
        "(docs/backends-performance.md). 1: the schemes' own order.",
        minimum=1,
        maximum=8,
        backend=False,
        cli_help=(
            "draw N x k candidate mutants, keep the k changed nearest the cursor (1: the schemes' order)"
        ),
    )
    decide_after: int = setting(
        16,
        int,
        "Repair mode with a local (`hf`) model: write every completion's first this many tokens, "
        "choose the repaired one on them, and finish only that one before answering; the language "
        "server then writes the others to their ends in the background (pausing for every newer "
        "request) and records the verdict on the whole completions. 0: finish every completion "
        "before choosing (`cctest bench` always does, and monitor mode, which only checks).",
        minimum=0,
        maximum=4096,
        backend=False,
        metavar="N",
        cli_help="choose on every completion's first N tokens and write on only the chosen one "
        "(default {default}; 0: every completion whole, as --json then shows)",
    )
    spare_suffix: bool = setting(
        True,
        bool,
        "With a model that reads the code after the cursor before the prompt (a suffix-first, SPM, "
        "fill-in-the-middle layout), renaming schemes pick, where they have a choice, names that "
        "code does not use, so a mutant leaves it as it is: its row shares that code and the "
        "prompt's start with the prompt's row instead of being read whole on its own "
        "(docs/backends-performance.md). false: the schemes' own order.",
        backend=False,
        cli_help=(
            "with a suffix-first FIM model, renames prefer names the code after the cursor does not use "
            "(the setting spare_suffix)"
        ),
    )
    near_sites: bool = setting(
        True,
        bool,
        "Mutants that change the prompt near the cursor: GRA's dead code goes nearest the cursor (not "
        "at the function's start), REL renames first the local first used nearest it, and with "
        "spare_suffix a rename that cannot spare the code after the cursor is kept only as its "
        "family's first mutant. A local model reads each row from its first change on, so this "
        "costs fewer tokens (docs/backends-performance.md). false: the schemes' own choice.",
        backend=False,
        cli_help=(
            "mutants changed near the cursor: GRA's dead code nearest it, and a rename that cannot "
            "spare a suffix-first model's suffix only as its family's first (the setting near_sites)"
        ),
    )
    prefill_budget: float = setting(
        2.0,
        float,
        "The most a repair's rows may cost the model to read, as a multiple of the plain prompt's "
        "tokens (at least 1,024 counted): each mutant costs the tokens after its first difference "
        "from the prompt, which a batched model reads on its own (a renamed parameter changes the "
        "`def` line and costs the whole function). Over the budget, the costliest mutants give "
        "way to cheaper ones, keeping at least 3 scheme families (docs/mutators.md). 0: no bound, "
        "the schemes' own choice.",
        minimum=0,
        maximum=100,
        backend=False,
        metavar="X",
        cli_help="the most the rows may cost to read, times the plain prompt's tokens "
        "(default {default}; 0: no bound)",
    )
    threshold: float | None = setting(
        None,
        float,
        "Absolute threshold T of Algorithm 1 (null: use relativeThreshold).",
        nullable=True,
        minimum=0,
        backend=False,
        cli_help="absolute T of Algorithm 1 (default: relative)",
    )
    relative_threshold: float = setting(
        0.8,
        float,
        "T as a fraction of the other completions, T = relativeThreshold x (n-1).",
        minimum=0,
        maximum=1,
        backend=False,
        cli_help="T as a fraction of the other completions (default {default})",
    )
    max_distance: float = setting(
        0.1,
        float,
        "Drop mutants whose structural distance to the prompt exceeds this.",
        minimum=0,
        maximum=1,
        backend=False,
        cli_help="drop mutants farther than this (default {default})",
    )
    reduce_formulas: bool = setting(
        False,
        bool,
        "Send the model every equation in the prompt's comments and docstrings in its reduced form "
        "(`a*x + b + a = 0 + a` as `a*x + b = 0`; see `cctest formula reduce`).",
        backend=False,
    )
    max_new_tokens: int = setting(64, int, "Longest completion, in tokens.", minimum=1)
    temperature: float = setting(
        0.0,
        float,
        "Sampling temperature; 0 is greedy (OpenAI's range).",
        minimum=0,
        maximum=2,
        cli_help="0 (greedy, the default) to 2",
    )
    top_p: float = setting(
        1.0,
        float,
        "Nucleus sampling mass.",
        minimum=0,
        exclusive_minimum=True,
        maximum=1,
        cli_help="nucleus sampling mass, above 0 and at most 1",
    )
    stop: tuple[str, ...] = setting((), tuple, "Extra stop sequences.")
    fim: str = setting(
        "auto",
        str,
        "Fill-in-the-middle: show the model the code after the cursor in its FIM template. `auto`: "
        "`hf` uses the template the model's `tokenizer_config.json` declares (`fim_template`), "
        "else detects it from the tokenizer's special tokens, `http` sends the server's "
        "`suffix` field (`tgi` needs a named template); `off`: left to right only; a family "
        "(`starcoder`, `santacoder`, `qwen`, `codegemma`, `codellama`, `deepseek`, each also with "
        "`-spm` for suffix-prefix-middle order); or a layout of your own holding `{prefix}` and "
        "`{suffix}` once each, e.g. `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`.",
        parse=_parse_fim,
        cli_help=(
            "fill in the middle: auto (detect the template; a server's suffix field), off, a family "
            "(starcoder, qwen, codellama, deepseek, ...; NAME-spm for SPM order) or a layout with "
            "{prefix} and {suffix}"
        ),
    )
    fim_suffix_share: float = setting(
        0.25,
        float,
        "When the code before and after the cursor does not fit the model's context, the share of "
        "the room (in tokens) kept for the code after it; the code before it gets the rest, and "
        "room one side does not use goes to the other. Both sides keep the code nearest the cursor.",
        minimum=0,
        maximum=1,
    )
    completion_scope: str = setting(
        "block",
        str,
        "How much a completion may write: `line` (the rest of the line), `block` (up to the end of "
        "the cursor's block), `auto` (a line when the cursor is inside an unfinished line, a block "
        "on an empty one). Every completion is also cut where it starts repeating the code after "
        "the cursor.",
        choices=SCOPES,
        backend=False,
        cli_help="line, block (default) or auto (a line inside an unfinished line, a block on an empty one)",
    )
    device: str = setting(
        "auto",
        str,
        "`hf`: `auto`, `cpu`, `cuda` or `cuda:N`.",
        cli_help="auto, cpu, cuda or cuda:N (hf)",
    )
    dtype: str = setting("auto", str, "`hf`: the weights' type.", choices=DTYPES)
    threads: int = setting(
        0,
        int,
        "`hf`: CPU threads for torch, at most the machine's CPU cores (0: before each call, as "
        "many as other work leaves cores idle, up to torch's default; `cctest bench` keeps "
        "torch's default, so that its completions do not depend on the load).",
        minimum=0,
        parse=_at_most_the_cores,
        cli_help="CPU threads for torch, at most the CPU cores; 0: the idle cores, decided per call (hf)",
    )
    timeout: float = setting(
        30.0,
        float,
        "Seconds per backend call before it counts as failed (the language server gives a whole "
        "request this plus one second).",
        minimum=0,
        exclusive_minimum=True,
        cli_help="seconds per backend call",
    )
    max_concurrency: int = setting(8, int, "`http`: variant requests in flight at once.", minimum=1)
    seed: int = setting(
        0,
        int,
        "Seed for mutant generation and sampling.",
        minimum=0,
        cli_help="vary the choice of sites and names (default {default})",
    )
    mode: str = setting(
        "repair",
        str,
        "`repair`: answer with the repaired completion; `monitor`: answer with the plain completion "
        "at once and check it in the background; `off`: answer nothing.",
        choices=MODES,
        backend=False,
    )
    defect_log: str | None = setting(
        None,
        str,
        "Path of the SQLite defect log (null: `defects.sqlite3` under the user cache directory, "
        "e.g. `~/.cache/cctest/`).",
        nullable=True,
        path=True,
        backend=False,
        cli_help="the defect log (default: the language server's)",
    )
    log_all: bool = setting(
        False,
        bool,
        "Record every request in the defect log, not only suspected defects.",
        backend=False,
        cli_help="record every verdict, not only suspected defects",
    )
    settle_verdicts: bool = setting(
        True,
        bool,
        "Repair mode deciding early (`decideAfter`): after the answer, write the completions the "
        "decision cut to their ends in the background (pausing for every newer request) and record "
        "the verdict on the whole completions. Off: record the verdict made on the first "
        "`decideAfter` tokens, and spend no model time after the answer.",
        backend=False,
    )
    debounce_ms: int = setting(
        0,
        int,
        "Wait this long (milliseconds) after a request before starting model work; a newer request "
        "for the same document in the meantime wins.",
        minimum=0,
        maximum=10_000,  # a longer wait is no debounce, and must not hold a request for ever
        backend=False,
    )

    def defect_log_path(self) -> Path:
        # os.path.expanduser: ``~nosuchuser`` stays as it is (Path.expanduser raises); the defect log
        # refuses it when it opens the path
        return Path(os.path.expanduser(self.defect_log)) if self.defect_log else default_defect_log()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> tuple[Settings, list[str]]:
        """Settings from a mapping (camelCase or snake_case keys); invalid values keep defaults."""
        errors: list[str] = []
        values: dict[str, Any] = {}
        specs = SPECS
        for key, raw in (data or {}).items():
            name = _snake(key)
            if name not in specs:
                errors.append(f"cctest: unknown setting '{key}' was ignored.")
                continue
            try:
                values[name] = specs[name].validate(raw)
            except (ConfigError, UnknownSchemeError) as exc:
                errors.append(f"cctest: setting '{key}': {str(exc)[:-1]}; the default is used.")
        return cls(**values), errors

    def replace(self, **changes: Any) -> Settings:
        for name, value in changes.items():
            if name not in SPECS:
                raise ConfigError(f"no such setting '{name}'.")
            try:
                changes[name] = SPECS[name].validate(value)
            except ConfigError as exc:
                raise ConfigError(f"{name.replace('_', '-')}: {exc}") from None
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
            for f in dataclasses.fields(self)
        }


# every setting's description, in the fields' order
SPECS: dict[str, Spec] = {f.name: f.metadata["spec"] for f in dataclasses.fields(Settings)}


def backend_key(settings: Settings) -> tuple[Any, ...]:
    """The part of the settings that decides which backend (and model) is built."""
    return tuple((name, getattr(settings, name)) for name, spec in SPECS.items() if spec.backend)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


__all__ = [
    "Settings",
    "Spec",
    "SPECS",
    "BACKENDS",
    "PROVIDERS",
    "MODES",
    "DTYPES",
    "SCOPES",
    "backend_key",
    "default_defect_log",
    "setting",
]


# a Hugging Face hub id, OWNER/NAME: letters, digits, '-', '_' and '.', each part from a letter or digit
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def missing_model_dir(model: str) -> str:
    """The sentence for a model (``--model``, the setting ``model``) that is no existing path; one
    that reads as a hub id (OWNER/NAME) also says that cctest never downloads, and how to."""
    path = Path(model).expanduser()
    if not _HUB_ID.fullmatch(model):
        return f"the model directory {path} does not exist."
    local = f"models/{model.split('/')[1]}"
    return (
        f"the model directory {path} does not exist, and cctest loads local directories only (it never "
        f"downloads): if {model} is a Hugging Face hub id, download it first, e.g. with "
        f"'huggingface-cli download {model} --local-dir {local}' (or 'hf download'), then pass "
        f"--model {local}."
    )

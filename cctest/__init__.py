"""cctest: test and repair the completions of code-completion models (CCTest, ICSE 2023).

The public API::

    from cctest import Engine, Settings, create_backend, prompt_at

    settings = Settings(backend="hf")              # the bundled model
    async with create_backend(settings) as backend:
        result = await Engine(backend, settings).run(prompt_at(text, line, col))
    result.completion, result.original_is_outlier, result.outliers

Names are imported on first use, so ``import cctest`` does not load libcst, torch or transformers;
type checkers read the same names from the ``TYPE_CHECKING`` imports below, so ``cctest.Engine``
has its real type for them. ``_EXPORTS`` and those imports must name the same things (a unit test
checks it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # "X as X": re-exported, for type checkers only
    from .backends import create_backend as create_backend
    from .backends.base import Backend as Backend
    from .backends.base import GenerationOptions as GenerationOptions
    from .backends.rules import RuleBackend as RuleBackend
    from .config import Settings as Settings
    from .demutate import demutate as demutate
    from .detect import select_outliers as select_outliers
    from .detect import similarity_matrix as similarity_matrix
    from .document import prompt_at as prompt_at
    from .document import read_source as read_source
    from .engine import Engine as Engine
    from .engine import Settling as Settling
    from .errors import BackendError as BackendError
    from .errors import CCTestError as CCTestError
    from .errors import InputError as InputError
    from .mutators import (
        SCHEMES as SCHEMES,
    )
    from .mutators import (
        generate_mutants as generate_mutants,
    )
    from .mutators import (
        mutate_whole as mutate_whole,
    )
    from .types import (
        Completion as Completion,
    )
    from .types import (
        EngineResult as EngineResult,
    )
    from .types import (
        Mutant as Mutant,
    )
    from .types import (
        Prompt as Prompt,
    )
    from .types import (
        Verdict as Verdict,
    )

__version__ = "0.1.0"

_EXPORTS = {
    "Engine": "cctest.engine",
    "Settling": "cctest.engine",
    "Settings": "cctest.config",
    "create_backend": "cctest.backends",
    "Backend": "cctest.backends.base",
    "GenerationOptions": "cctest.backends.base",
    "RuleBackend": "cctest.backends.rules",
    "Prompt": "cctest.types",
    "Mutant": "cctest.types",
    "Completion": "cctest.types",
    "Verdict": "cctest.types",
    "EngineResult": "cctest.types",
    "prompt_at": "cctest.document",
    "read_source": "cctest.document",
    "generate_mutants": "cctest.mutators",
    "mutate_whole": "cctest.mutators",
    "SCHEMES": "cctest.mutators",
    "demutate": "cctest.demutate",
    "similarity_matrix": "cctest.detect",
    "select_outliers": "cctest.detect",
    "CCTestError": "cctest.errors",
    "InputError": "cctest.errors",
    "BackendError": "cctest.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cctest' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

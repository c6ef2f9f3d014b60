"""cctest: test and repair the completions of code-completion models (CCTest, ICSE 2023).

The public API::

    from cctest import Engine, Settings, create_backend, prompt_at

    settings = Settings(backend="hf")              # the bundled model
    async with create_backend(settings) as backend:
        result = await Engine(backend, settings).run(prompt_at(text, line, col))
    result.completion, result.original_is_outlier, result.outliers

Names are imported on first use, so ``import cctest`` does not load libcst, torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Engine": "cctest.engine",
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

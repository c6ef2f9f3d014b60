"""The one exception tree of cctest.

    CCTestError                      base of every error cctest raises on purpose
    ├── InputError                   bad input from a user: a path, a position, a setting, a scheme name
    │   ├── UnknownSchemeError       a mutation scheme that does not exist
    │   ├── PositionError            a cursor outside the document
    │   └── FormulaError             an equation outside the formula grammar (``cctest.formula``)
    ├── ConfigError                  settings that cannot be used together or are out of range
    │   └── MissingExtraError        a command needs packages of an extra that is not installed
    ├── BackendError                 a completion backend failed (base of the ones below)
    │   ├── ModelLoadError           a model path that is missing, not a model, or lacks a tokenizer
    │   ├── BackendUnavailable       a server refused the connection or the URL is bad
    │   ├── BackendTimeout           no answer within the timeout
    │   ├── BackendResponseError     a server answered with an error status or unreadable content
    │   └── BackendOutOfMemory       the model ran out of (GPU or CPU) memory
    ├── DatasetError                 a benchmark dataset that is missing or malformed
    │   └── TaskError                a coding task that is malformed, or whose reference fails its own checks
    └── DefectLogError               the defect log cannot be opened or written
        └── DefectLogBusy            another process holds the log locked past the wait: try again later

Every message is one sentence a user can act on; the CLI prints it to stderr and exits with 2.
"""

from __future__ import annotations


class CCTestError(Exception):
    """Base of every error cctest raises on purpose."""


class InputError(CCTestError):
    """Bad input from a user."""


class UnknownSchemeError(InputError):
    """A mutation scheme that does not exist."""


class PositionError(InputError):
    """A cursor position outside the document."""


class FormulaError(InputError):
    """An equation that is not in the formula grammar of ``cctest.formula``."""


class ConfigError(CCTestError):
    """Settings that cannot be used."""


class MissingExtraError(ConfigError):
    """A command needs packages of an extra (``cctest[bench]``, ``cctest[suites]``) that are not installed."""


class BackendError(CCTestError):
    """A completion backend failed."""


class ModelLoadError(BackendError):
    """A model directory is missing, is not a model, or has no tokenizer."""


class BackendUnavailable(BackendError):
    """A completion server refused the connection or its URL is unusable."""


class BackendTimeout(BackendError):
    """A completion backend gave no answer within its timeout."""


class BackendResponseError(BackendError):
    """A completion server answered with an error status or content that cannot be read."""


class BackendOutOfMemory(BackendError):
    """The model ran out of memory."""


class DatasetError(CCTestError):
    """A benchmark dataset is missing or malformed."""


class TaskError(DatasetError):
    """A natural-language coding task is malformed, or its reference fails its own tests or inputs."""


class DefectLogError(CCTestError):
    """The defect log cannot be opened or written."""


class DefectLogBusy(DefectLogError):
    """Another process held the defect log locked for longer than the wait: a passing state, so
    the next write tries again."""

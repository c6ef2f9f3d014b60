"""cctest bench: the engine over a dataset, completions run against tests, a report (docs/bench.md)."""

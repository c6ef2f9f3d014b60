"""cctest bench: run the engine over a dataset, execute the completions against tests, and report (see docs/bench.md)."""

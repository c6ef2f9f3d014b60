"""Natural-language benchmark suites: each is a task set, its variants and its metrics, run on
``cctest.tasks`` and the bench's run machinery (``cctest bench SUITE``)."""

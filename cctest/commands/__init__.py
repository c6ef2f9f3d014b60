"""Sub-commands of the ``cctest`` command line, one module each (see ``cctest.cli``)."""

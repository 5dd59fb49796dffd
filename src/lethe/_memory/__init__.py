"""The memory: ``Memory``, its configuration, its versions (built in one place, written
through one sequence), its reads and writes, and its document form."""

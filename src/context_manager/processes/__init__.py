"""``--processes N``: the engine connection in one process, the calls served by N others."""

MAX_PROCESSES = 64

"""The speed suite: latency and peak memory of every function on the seeded workloads W1–W5, side
by side with the floor (one ``orjson.loads`` of the request plus one ``orjson.dumps`` of the
response) and the peer (LangChain's ``trim_messages``), each set in its own child process.

``python -m bench.speed`` (also ``python -m bench``); ``python -m bench.speed profile``,
``large-history``, ``turn-cost``. Definitions and results: docs/benchmarks/speed.md.
"""

"""The scale suite: the worker under mixed load at one serving process and at N (``python -m
bench.scale``). A load process (``bench.scale.load``) drives a test engine, the worker and its
callers through a warm-up, a small-calls phase and a mixed phase (``bench.scale.workload``); this
process samples the worker tree's memory and CPU from ``/proc`` (``bench.scale.proctree``).
Definitions and results: docs/benchmarks/scale.md.
"""

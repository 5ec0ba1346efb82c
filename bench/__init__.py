"""Speed and memory benchmarks: every function against the floor (one parse plus one write of
the same bytes) and a peer (LangChain's trimming), on seeded agent histories.

Run ``python -m bench`` (or ``python -m bench --quick``); see BENCHMARKS.md.
"""

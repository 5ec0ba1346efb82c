"""The benchmarks: one kit (``bench.kit``) and the suites that use it.

``python -m bench --list`` lists the suites; ``python -m bench`` runs the speed suite. Each suite
is a package run as ``python -m bench.<suite>``; the kit is the only code they share, and no
suite imports another (the import contract in ``pyproject.toml``). Results: BENCHMARKS.md and
``docs/benchmarks/``.
"""

"""The counting suite: how far each estimator's counts are from exact tokenizers and from the
provider's own counts, and what exact counting and usage calibration cost.

``python -m bench.counting COMMAND``: ``accuracy`` (heuristic against tokenizers; with
``--realdata``, against provider usage), ``tokenizer`` (the tokenizer estimator's speed targets),
``calibration-cost`` (what ``count_calibration: usage`` adds to a warm turn), ``retention-policies``
(the README's two worked retention policies on recorded sessions). Definitions and results:
docs/benchmarks/counting.md.
"""

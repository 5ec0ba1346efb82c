"""``context::assemble`` as a plan of passes.

``prepare`` (the model, the usable budget, the model-facing view and its anchor, the calibrated
budget) → the passes ``plan`` lists for the configuration, each changing the ``WorkingContext``
and returning its report → ``finish`` (the router's second count, the over-budget decision, the
ledger, explain, the prefix report). ``run`` is that sequence; ``core.assemble`` is the public
entry (summary reuse and previews around it).
"""

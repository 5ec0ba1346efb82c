"""``python -m bench.counting COMMAND [ARGS ...]``: one of :data:`COMMANDS` (``COMMAND --help``)."""

from __future__ import annotations

import sys

from bench.kit import cli

COMMANDS = {
    "accuracy": ("bench.counting.accuracy", "heuristic against exact tokenizers; --realdata: against provider usage"),
    "tokenizer": ("bench.counting.tokenizer", "the tokenizer estimator's targets (cold W2, warm W5)"),
    "calibration-cost": ("bench.counting.calibration_cost", "what count_calibration: usage adds to a warm W5 turn"),
    "retention-policies": ("bench.counting.retention_policies", "the README's two retention policies on recorded sessions"),
}

if __name__ == "__main__":
    sys.exit(cli.run(sys.argv[1:], COMMANDS, None, "python -m bench.counting"))

"""``python -m bench [ARGS ...]``: the speed suite (``python -m bench.speed``, the same arguments
and commands); ``python -m bench --list`` lists every suite."""

from __future__ import annotations

import sys

SUITES = {
    "speed": "latency and memory of every function on generated agent histories, beside the floor and the peer",
    "scale": "throughput, latency and memory under mixed load at one and N serving processes",
    "counting": "counts against exact tokenizers and provider usage; what counting and calibration cost",
    "replay": "sessions replayed call by call: reductions, the prompt-cache economy, the harness's turn loop",
    "recall": "long-range future-entity recall of the contexts a replay returns",
    "league": "the worker's modes against simulated peers: tokens, prefix rewrites, bills, recall",
    "latency": "a replay on a simulated clock: how long calls wait for a summariser, the worker beside the peers",
}


def listing() -> str:
    width = max(len(name) for name in SUITES)
    return "\n".join(["suites (python -m bench.SUITE --help):",
                      *(f"  {name:<{width}}  {what}" for name, what in SUITES.items())])


if __name__ == "__main__":
    if sys.argv[1:2] in (["--list"], ["list"]):
        print(listing())
        sys.exit(0)
    from bench.kit import cli
    from bench.speed.__main__ import COMMANDS, workloads

    sys.exit(cli.run(sys.argv[1:], COMMANDS,
                     lambda argv: workloads(argv, "python -m bench", "\n\n" + listing()), "python -m bench"))

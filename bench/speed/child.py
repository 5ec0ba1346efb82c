"""One workload set, measured in its own process so its peak RSS is its own.

``python -m bench.speed.child SET DATA_DIR RUNS [INDEX]`` prints one JSON object on stdout. The
request bytes are read from ``DATA_DIR`` (written by the parent), so generating the workload
never counts towards this process's memory high-water mark. What is measured: ``bench.speed.sets``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from bench.speed.sets import run_set, run_w5_cold, run_w5_interleaved, run_w5_warm


def main(argv: list[str]) -> int:
    name, data_dir = argv[0], Path(argv[1])
    if name == "W5-warm":
        result = run_w5_warm(data_dir)
    elif name == "W5-interleaved":
        result = run_w5_interleaved(data_dir)
    elif name == "W5-cold":
        result = run_w5_cold(data_dir, [int(k) for k in argv[2].split(",")])
    else:
        result = run_set(name, data_dir, int(argv[2]))
    sys.stdout.buffer.write(orjson.dumps(result) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

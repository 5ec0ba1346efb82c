"""``python -m context_manager.schemas --regenerate-goldens [--dir DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from context_manager.schemas.goldens import default_golden_dir, write_goldens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m context_manager.schemas",
        description="Write the schema golden files of the registered functions.",
    )
    parser.add_argument("--regenerate-goldens", action="store_true",
                        help="rewrite one golden file per registered function")
    parser.add_argument("--dir", type=Path, default=None,
                        help="target directory (default: schemas/goldens of the checkout)")
    args = parser.parse_args(argv)
    if not args.regenerate_goldens:
        parser.print_usage(sys.stderr)
        print("nothing to do: pass --regenerate-goldens", file=sys.stderr)
        return 2
    for path in write_goldens(args.dir or default_golden_dir()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

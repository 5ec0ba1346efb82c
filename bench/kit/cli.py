"""A suite's command line: ``python -m bench.<suite> [COMMAND] [ARGS ...]``.

A suite has a default measurement (its own arguments) and may have named commands, each a module
of the suite with ``main(argv)``; the first argument chooses the command when it names one.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def run(argv: list[str], commands: Mapping[str, tuple[str, str]],
        default: Callable[[list[str]], Any] | None, prog: str) -> int:
    """Run the command ``argv[0]`` names (``commands``: name -> (module, what it measures)), else
    ``default`` with every argument; without a default, list the commands."""
    if argv and argv[0] in commands:
        module = importlib.import_module(commands[argv[0]][0])
        status = module.main(argv[1:])
        return status if isinstance(status, int) else 0
    if default is None or (argv and argv[0] in ("commands", "--commands")):
        print(usage(commands, prog), file=sys.stderr if default is None and argv else sys.stdout)
        return 0 if not argv or argv[0] in ("commands", "--commands") else 2
    status = default(argv)
    return status if isinstance(status, int) else 0


def usage(commands: Mapping[str, tuple[str, str]], prog: str) -> str:
    width = max((len(name) for name in commands), default=0)
    return "\n".join([f"usage: {prog} COMMAND [ARGS ...]  (COMMAND --help for its arguments)", "",
                      *(f"  {name:<{width}}  {what}" for name, (_, what) in commands.items())])

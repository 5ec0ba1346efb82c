"""Command line: the worker (`context-manager [--url] [--config] [--processes] [--manifest]`) and
`context-manager call <function_id>` (one in-process call, no engine)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from context_manager.adapters.log_format import configure_logging
from context_manager.processes import MAX_PROCESSES

DEFAULT_URL = "ws://127.0.0.1:49134"
PROCESSES_ENV = "III_CM_PROCESSES"

# Every command, one line each, at the top of `context-manager --help` (the worker's own flags
# follow below them; `call --help` details the other).
COMMANDS = (
    ("context-manager [options]", "run the worker against an iii engine"),
    ("context-manager --manifest", "print the worker manifest JSON and exit"),
    ("context-manager call <function_id>", "one call in-process: JSON stdin to stdout"),
)


def commands_text() -> str:
    width = max(len(command) for command, _ in COMMANDS)
    lines = [f"  {command.ljust(width)}  {summary}" for command, summary in COMMANDS]
    return "commands:\n" + "\n".join(lines)


def resolve_url(flag: str | None) -> str:
    """`--url` wins, then a non-empty `III_URL`, then the local engine's default port."""
    if flag:
        return flag
    return os.environ.get("III_URL") or DEFAULT_URL


def resolve_processes(flag: str | None) -> int:
    """`--processes` wins, then a non-empty `III_CM_PROCESSES`, then 1 (everything in one
    process); a value that is not a whole number from 1 to the limit is a usage error."""
    raw = flag if flag is not None else os.environ.get(PROCESSES_ENV, "").strip() or "1"
    source = "--processes" if flag is not None else PROCESSES_ENV
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_PROCESSES:
        raise ValueError(f"{source} must be a whole number from 1 to {MAX_PROCESSES}, got {raw!r}")
    return int(text)


def _usage_error(message: str) -> int:
    sys.stderr.write(f"context-manager: {message}\n")
    return 2


def _read_config_file(path: str) -> Any:
    from context_manager.config.seed import load_seed_file

    return load_seed_file(path)


def run_call(argv: Sequence[str]) -> int:
    from context_manager.handlers.registry import FUNCTIONS

    parser = argparse.ArgumentParser(prog="context-manager call",
                                     description="Run one function in-process and print its JSON result.",
                                     epilog="function ids:\n" + "\n".join(f"  {f}" for f in FUNCTIONS),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("function_id", help="the function to run (listed below)")
    parser.add_argument("--input", metavar="FILE", help="read the JSON payload from this file instead of stdin")
    parser.add_argument("--config", metavar="FILE", help="configuration file (YAML), as for the worker")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0

    from context_manager.api import UnknownFunction, build_context, run_handler
    from context_manager.core.settings import DEFAULT_CONFIG
    from context_manager.wire.codec import dumps_wire, loads
    from context_manager.wire.errors import CallError, ContextManagerError, error_envelope

    if args.function_id not in FUNCTIONS:
        return _usage_error(f"unknown function id {args.function_id!r}; known: {', '.join(FUNCTIONS)}")
    try:
        if args.input:
            with open(args.input, "rb") as fh:
                raw = fh.read()
        else:
            raw = sys.stdin.buffer.read()
    except OSError as exc:
        return _usage_error(f"cannot read {args.input}: {exc.strerror or exc}")
    try:
        config = _read_config_file(args.config) if args.config else None
    except OSError as exc:
        return _usage_error(f"cannot read {args.config}: {exc.strerror or exc}")
    except Exception as exc:  # invalid configuration content
        return _usage_error(str(exc))

    try:
        ctx = build_context(config or DEFAULT_CONFIG, None)
        payload = loads(raw)
        result = run_handler(args.function_id, payload, ctx)
        output = dumps_wire(result)
    except (ContextManagerError, CallError) as exc:
        return _fail(*error_envelope(exc))
    except UnknownFunction:  # pragma: no cover - checked above
        return _usage_error(f"unknown function id {args.function_id!r}")
    except Exception as exc:
        logging.getLogger("context_manager").exception("unexpected failure")
        return _fail(*error_envelope(exc))
    sys.stdout.buffer.write(output + b"\n")
    sys.stdout.flush()
    return 0


def _fail(code: str, message: str) -> int:
    sys.stderr.buffer.write(orjson.dumps({"code": code, "message": message}) + b"\n")
    sys.stderr.flush()
    return 1


def run_worker_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="context-manager",
                                     description="context-manager worker for the iii engine.\n\n" + commands_text(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help=f"engine WebSocket URL (default: $III_URL or {DEFAULT_URL})")
    parser.add_argument("--config", metavar="FILE",
                        help="seed configuration file (YAML), used only when no value is stored")
    parser.add_argument("--manifest", action="store_true", help="print the worker manifest JSON and exit")
    parser.add_argument("--processes", metavar="N",
                        help=f"serve calls in N processes, 1 to {MAX_PROCESSES} (default: ${PROCESSES_ENV} or 1)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        processes = resolve_processes(args.processes)
    except ValueError as exc:
        return _usage_error(str(exc))
    if args.manifest:
        from context_manager.manifest import render_manifest

        sys.stdout.write(render_manifest())
        return 0
    from context_manager.worker import run_worker

    return run_worker(resolve_url(args.url), args.config, processes)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    configure_logging()
    if argv and argv[0] == "call":
        return run_call(argv[1:])
    return run_worker_command(argv)


def entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())

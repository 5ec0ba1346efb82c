"""Realistic tool output for recorded agent sessions: file reads, grep hits, test logs, diffs.

Every text is drawn from one ``random.Random`` passed in by the caller, so a seed always yields
the same bytes. The project the agent works on is a small fictional Python service.
"""

from __future__ import annotations

import random

MODULES = ("api", "models", "storage", "cache", "pricing", "events", "auth", "config", "worker",
           "reports")
PACKAGE = "inventory"
_NOUNS = ("item", "order", "sku", "warehouse", "price", "batch", "event", "token", "session",
          "quota", "report", "cursor", "page", "tenant", "cache_key", "lease")
_VERBS = ("load", "save", "fetch", "update", "compute", "validate", "render", "flush", "retry",
          "resolve", "merge", "split", "apply", "refresh", "encode", "decode")
_TYPES = ("int", "str", "bool", "float", "dict[str, Any]", "list[Item]", "Order | None",
          "Decimal", "datetime", "bytes")
_ERRORS = (
    "AssertionError: assert 41 == 42",
    "KeyError: 'warehouse_id'",
    "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'",
    "ValueError: invalid literal for int() with base 10: 'n/a'",
    "AttributeError: 'NoneType' object has no attribute 'sku'",
    "TimeoutError: lease not released after 5.0 s",
    "sqlite3.IntegrityError: UNIQUE constraint failed: items.sku",
)


def module_path(rng: random.Random) -> str:
    return f"src/{PACKAGE}/{rng.choice(MODULES)}.py"


def test_path(rng: random.Random) -> str:
    return f"tests/test_{rng.choice(MODULES)}.py"


def identifier(rng: random.Random) -> str:
    return f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"


def _source_lines(rng: random.Random, count: int) -> list[str]:
    """Plausible Python source: imports, a class or two, methods with bodies."""
    lines = ['"""' + f"{rng.choice(_NOUNS).capitalize()} handling for the {PACKAGE} service." + '"""',
             "", "from __future__ import annotations", "",
             "import logging", "from dataclasses import dataclass", "from decimal import Decimal",
             "from typing import Any", "", "log = logging.getLogger(__name__)", ""]
    while len(lines) < count:
        roll = rng.random()
        if roll < 0.2:
            name = rng.choice(_NOUNS).title().replace("_", "")
            lines += ["", "@dataclass(frozen=True)", f"class {name}:"]
            for _ in range(rng.randint(2, 5)):
                lines.append(f"    {rng.choice(_NOUNS)}: {rng.choice(_TYPES)}")
        else:
            name = identifier(rng)
            arg = rng.choice(_NOUNS)
            lines += ["", f"def {name}({arg}: {rng.choice(_TYPES)}, *, strict: bool = False) "
                          f"-> {rng.choice(_TYPES)}:",
                      f'    """{name.replace("_", " ").capitalize()} for one {arg}."""']
            for _ in range(rng.randint(3, 12)):
                lines.append(_statement(rng, arg))
            lines.append(f"    return {rng.choice(_NOUNS)}")
    return lines[:count]


def _statement(rng: random.Random, arg: str) -> str:
    other = rng.choice(_NOUNS)
    return rng.choice((
        f"    {other} = {identifier(rng)}({arg})",
        f"    if {arg} is None:\n        raise ValueError(\"missing {arg}\")",
        f"    log.debug(\"{identifier(rng)}: %s\", {arg})",
        f"    for {other} in {arg}.{rng.choice(_NOUNS)}s:\n        {identifier(rng)}({other})",
        f"    {other} = Decimal(\"{rng.randint(1, 999)}.{rng.randint(0, 99):02d}\") * {arg}.quantity",
        f"    # keep the {other} stable across retries",
        f"    {other}_map: dict[str, Any] = {{k: v for k, v in {arg}.items() if v}}",
    ))


def file_read(rng: random.Random, path: str) -> str:
    """``fs::read_file`` output: numbered lines of a window of the file."""
    count = rng.randint(40, 240)
    start = rng.choice((1, 1, 1, rng.randint(20, 400)))
    body = "\n".join(_source_lines(rng, count)).split("\n")[:count]
    return "\n".join(f"{start + i:>5}\t{line}" for i, line in enumerate(body)) + "\n"


def grep(rng: random.Random, pattern: str) -> str:
    """``search::grep`` output: ``path:line:text`` hits, sorted by path."""
    hits = []
    for _ in range(rng.randint(3, 70)):
        path = rng.choice((module_path(rng), test_path(rng)))
        text = _statement(rng, rng.choice(_NOUNS)).strip().split("\n")[0]
        hits.append((path, rng.randint(1, 900), f"{text}  # {pattern}"))
    hits.sort()
    return "\n".join(f"{p}:{n}:{t}" for p, n, t in hits) + "\n"


def test_log(rng: random.Random, target: str, failing: bool) -> tuple[str, int]:
    """``shell::run`` of pytest: progress dots, failure tracebacks, the summary line."""
    files = sorted({test_path(rng) for _ in range(rng.randint(3, 12))})
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
             f"rootdir: /workspace/{PACKAGE}-service", "configfile: pyproject.toml",
             f"collected {rng.randint(40, 900)} items", ""]
    failures = []
    for path in files:
        dots = "".join("F" if failing and rng.random() < 0.03 else "." for _ in range(rng.randint(5, 70)))
        lines.append(f"{path} {dots}")
        failures += [(path, identifier(rng)) for c in dots if c == "F"]
    if failing and not failures:
        failures.append((files[0], identifier(rng)))
    if failures:
        lines += ["", "=================================== FAILURES ==================================="]
        for path, name in failures:
            lines += [f"____________________________ test_{name} ____________________________", ""]
            for _ in range(rng.randint(4, 14)):
                lines.append("    " + _statement(rng, rng.choice(_NOUNS)).strip().split("\n")[0])
            lines += [f">       assert {identifier(rng)}(item) == expected",
                      f"E       {rng.choice(_ERRORS)}", "",
                      f"{path}:{rng.randint(10, 600)}: {rng.choice(_ERRORS).split(':')[0]}"]
        lines += ["=========================== short test summary info ============================"]
        lines += [f"FAILED {path}::test_{name}" for path, name in failures]
    passed = rng.randint(40, 900)
    seconds = f"{rng.randint(1, 90)}.{rng.randint(0, 99):02d}"
    summary = f"{len(failures)} failed, {passed} passed" if failures else f"{passed} passed"
    lines.append(f"======================== {summary} in {seconds}s ========================")
    return "\n".join(lines) + "\n", 1 if failures else 0


def diff(rng: random.Random, path: str) -> str:
    """``shell::run`` of ``git diff``: one or more hunks of a unified diff."""
    lines = [f"diff --git a/{path} b/{path}", f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644",
             f"--- a/{path}", f"+++ b/{path}"]
    line_no = rng.randint(1, 50)
    for _ in range(rng.randint(1, 5)):
        context = _source_lines(rng, rng.randint(8, 30))[rng.randint(0, 5):]
        removed = rng.randint(0, 4)
        added = rng.randint(1, 8)
        lines.append(f"@@ -{line_no},{len(context) + removed} +{line_no},{len(context) + added} @@ def {identifier(rng)}(")
        half = len(context) // 2
        lines += [" " + c for c in context[:half]]
        lines += ["-" + _statement(rng, rng.choice(_NOUNS)).split("\n")[0] for _ in range(removed)]
        lines += ["+" + _statement(rng, rng.choice(_NOUNS)).split("\n")[0] for _ in range(added)]
        lines += [" " + c for c in context[half:]]
        line_no += len(context) + rng.randint(10, 80)
    return "\n".join(lines) + "\n"


def listing(rng: random.Random, directory: str) -> str:
    """``shell::run`` of ``ls -la``."""
    names = sorted({f"{rng.choice(MODULES)}{rng.choice(('.py', '.py', '_test.py', '.json', '.md'))}"
                    for _ in range(rng.randint(4, 20))})
    rows = ["total " + str(rng.randint(40, 400)), "drwxr-xr-x  5 agent agent  4096 Nov 30 06:12 .",
            "drwxr-xr-x 12 agent agent  4096 Nov 30 06:10 .."]
    rows += [f"-rw-r--r--  1 agent agent {rng.randint(200, 40000):>5} Nov 30 0{rng.randint(0, 6)}:"
             f"{rng.randint(10, 59)} {name}" for name in names]
    return f"$ ls -la {directory}\n" + "\n".join(rows) + "\n"


def edit_ack(rng: random.Random, path: str) -> str:
    """``fs::edit_file`` acknowledgement."""
    return (f"Applied 1 edit to {path}: +{rng.randint(1, 30)} -{rng.randint(0, 20)} lines "
            f"(now {rng.randint(80, 900)} lines).\n")


def build_log(rng: random.Random) -> str:
    """A long, noisy ``shell::run`` output (dependency install or a type checker run)."""
    lines = []
    for _ in range(rng.randint(400, 1600)):
        path = module_path(rng)
        lines.append(rng.choice((
            f"{path}:{rng.randint(1, 900)}: error: Incompatible types in assignment "
            f"(expression has type \"{rng.choice(_TYPES)}\", variable has type \"{rng.choice(_TYPES)}\")  [assignment]",
            f"{path}:{rng.randint(1, 900)}: note: Revealed type is \"{rng.choice(_TYPES)}\"",
            f"Collecting {rng.choice(_NOUNS)}-lib>={rng.randint(1, 9)}.{rng.randint(0, 20)} "
            f"(from {PACKAGE}-service==0.{rng.randint(1, 9)}.0)",
            f"  Downloading {rng.choice(_NOUNS)}_lib-{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
            f"-py3-none-any.whl ({rng.randint(10, 900)} kB)",
        )))
    lines.append(f"Found {rng.randint(1, 200)} errors in {rng.randint(1, 10)} files (checked 42 source files)")
    return "\n".join(lines) + "\n"

"""``python -m bench.counting.retention_policies --data DIR``: the README's two worked retention policies
measured on recorded sessions (tokens before and after, and the warnings of the last call).

Each session is assembled whole, as its last model call would send it, for a model with a window
large enough that no other pass acts: what changes is the retention pass alone.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from context_manager import call

# A coding agent: stack traces (error results) stay whole, large file reads keep head and tail,
# reasoning older than one turn goes. The recorded sessions read files with their own tools.
CODING = {
    "verbatim_turns": 1,
    "tools": {
        "rules": [
            {"function": "read_file", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}},
            {"function": "str_replace_editor", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}},
            {"function": "*bash", "result": {"mode": "over", "over": 2000, "to": 500, "keep": "both"}},
        ],
        "errors": {"mode": "keep"},
    },
    "reasoning": {"keep_turns": 1},
}

# A support agent: old user pastes are cut to their opening, tool results (bookings, lookups) stay.
SUPPORT = {
    "verbatim_turns": 2,
    "tools": {"default": {"result": {"mode": "keep"}}},
    "text": {"prompt": {"mode": "over", "over": 200, "to": 100, "keep": "head"}},
}

RUNS = [
    ("coding", CODING, "openhands-ponyc-4588.json"),
    ("coding", CODING, "minisweagent-django-13265.json"),
    ("support", SUPPORT, "taubench-airline-196.json"),
    ("support", SUPPORT, "sweagent-pydicom-1458.json"),
]
MODEL = {"id": "bench-model", "limits": {"context_window": 1_000_000, "max_output_tokens": 8000}}


def measure(policy: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    payload = {"messages": session["messages"], "model": MODEL, "system_prompt": session.get("system_prompt"),
               "options": {"max_result_tokens": 0, "allow_prune": False, "allow_compaction": False}}
    if session.get("tools"):
        payload["tools"] = session["tools"]
    out = call("context::assemble", payload, config={"retention": policy})
    return {"before": out["applied"]["initial_token_count"], "after": out["token_count"],
            "warnings": out["applied"].get("warnings", [])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.counting.retention_policies", description=__doc__)
    parser.add_argument("--data", required=True, help="folder of recorded sessions (see its SOURCES.md)")
    args = parser.parse_args(argv)
    for name, policy, file_name in RUNS:
        session = json.loads((Path(args.data) / file_name).read_text(encoding="utf-8"))
        result = measure(policy, session)
        saved = result["before"] - result["after"]
        print(f"{name:8} {file_name:34} {result['before']:>7} -> {result['after']:>7} tokens "
              f"(-{saved}, {100 * saved / result['before']:.1f} %)")
        for warning in result["warnings"]:
            print(f"{'':10}{json.dumps(warning, sort_keys=True)}")


if __name__ == "__main__":
    main()

"""Shared pieces of the fault-injection tests: a history that needs compaction (and survives
without it thanks to emergency reduction), seed files and lease-directory inspection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# usable = 3000 - 300 - min(20000, 10% of 3000) = 2400 tokens.
MODEL = {"id": "m", "limits": {"context_window": 3000, "max_output_tokens": 300}}
ROUTED = {"id": "routed-model"}


def long_session(turns: int = 5, tag: str = "") -> list[dict[str, Any]]:
    """Turns of: a short request, a call, a ~900-token result, a short answer (~5,660 tokens).

    With a summariser the head is compacted; without one, emergency reduction of the old
    results fits it into 2,400 tokens. ``tag`` makes a history (and its lease key) unique.
    """
    messages: list[dict[str, Any]] = []
    ts = 1
    for i in range(turns):
        messages += [
            {"role": "user", "content": [{"type": "text", "text": f"task {tag}{i} " + "x" * 400}],
             "timestamp": ts},
            {"role": "assistant", "content": [{"type": "function_call", "id": f"c{i}",
                                               "function_id": "read", "arguments": {"i": i}}],
             "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": ts + 1},
            {"role": "function_result", "function_call_id": f"c{i}", "function_id": "read",
             "content": [{"type": "text", "text": "r" * 3600}], "timestamp": ts + 2},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}],
             "stop_reason": "end", "model": "m", "provider": "p", "timestamp": ts + 3},
        ]
        ts += 4
    return messages


def assemble_request(tag: str = "", model: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"messages": long_session(tag=tag), "model": model or MODEL}


def write_seed(path: Path, **values: Any) -> Path:
    lines = []
    for key, value in values.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{key}: {text}")
    path.write_text("\n".join(lines) + "\n")
    return path


def lease_records(lease_dir: Path) -> list[Path]:
    """Lease record files (locks and temporaries aside)."""
    if not lease_dir.exists():
        return []
    return [p for p in lease_dir.rglob("*.json") if p.is_file()]

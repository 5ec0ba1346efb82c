"""A digest of the worker's answers over recorded and generated sessions, to show a change is
behaviour-neutral: run it before and after, and the two digests must be equal.

For every session (the recorded ones in ``--realdata`` and the generated ones in
``bench/kit/sessions``), every window in ``WINDOWS`` and every configuration in ``CONFIGS``,
it asks ``context::assemble`` and ``context::count-tokens`` for the history up to each
``STRIDE``-th message (and the whole history), and ``context::prune`` and ``context::compact``
for the whole history. Each answer (or error code and message) is written canonically and
hashed; the script prints one digest per session and configuration, and a total.

The summariser is a deterministic function of its prompts, written here so the script shares no
code with what it checks. Library calls share one process-wide session store, so the order of
calls is fixed and the store is the same in both runs.

    python scripts/answers_digest.py --realdata ../shared/realdata > digest.txt
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from context_manager import CallError, call

WINDOWS = (8_000, 32_000)
STRIDE = 7
CONFIGS: dict[str, dict[str, Any]] = {
    "faithful": {},
    "recommended": {"profile": "recommended"},
    "calibrated": {"count_calibration": "usage", "estimator": "auto", "anchor_messages": 1},
    "drop_oldest": {"overflow_fallback": "drop_oldest", "working_set": True, "reduce_to": 0.6},
    "placement": {"summary_placement": "message", "summary_check": "append", "report_prefix": True,
                  "eager_compaction_at": 0.7},
}


def summarizer(system_prompt: str, user_prompt: str, model: Any) -> str:
    seen = hashlib.sha256((system_prompt + "\x00" + user_prompt).encode()).hexdigest()[:16]
    return f"## Goal\nsummary {seen}\n## Progress\n{len(user_prompt)} characters folded"


def sessions(realdata: Path | None) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if realdata is not None:
        for path in sorted(realdata.glob("*.json")):
            found.append((path.stem, orjson.loads(path.read_bytes())))
    generated = Path(__file__).resolve().parent.parent / "bench" / "kit" / "sessions"
    for path in sorted(generated.glob("*.json.gz")):
        found.append((path.name.removesuffix(".json.gz"), orjson.loads(gzip.decompress(path.read_bytes()))))
    return found


def answer(function_id: str, payload: dict[str, Any], config: dict[str, Any]) -> bytes:
    try:
        result: Any = call(function_id, payload, config=config, summarizer=summarizer)
    except CallError as exc:
        result = {"error": exc.code, "message": exc.message}
    return orjson.dumps(result, option=orjson.OPT_SORT_KEYS)


def request(session: dict[str, Any], messages: list[Any], window: int) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": {"id": "digest-model", "limits": {"context_window": window, "max_output_tokens": window // 8}},
        "messages": messages,
        "options": {"explain": True},
    }
    if session.get("system_prompt") is not None:
        payload["system_prompt"] = session["system_prompt"]
    if session.get("tools"):
        payload["tools"] = session["tools"]
    return payload


def digest_session(session: dict[str, Any], config: dict[str, Any]) -> str:
    h = hashlib.sha256()
    messages = session["messages"]
    cuts = sorted({*range(STRIDE, len(messages), STRIDE), len(messages)})
    for window in WINDOWS:
        for cut in cuts:
            payload = request(session, messages[:cut], window)
            h.update(answer("context::assemble", payload, config))
            h.update(answer("context::count-tokens", payload, config))
        whole = request(session, messages, window)
        h.update(answer("context::prune", {"messages": messages}, config))
        h.update(answer("context::compact", whole, config))
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=None, help="folder of recorded sessions")
    args = parser.parse_args(argv)
    total = hashlib.sha256()
    with tempfile.TemporaryDirectory() as lease_dir:
        for name, session in sessions(args.realdata):
            for label, config in CONFIGS.items():
                line = f"{name} {label} {digest_session(session, {**config, 'lease_dir': lease_dir})}"
                total.update(line.encode())
                print(line, flush=True)
    print(f"total {total.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Counts against the provider's own prompt counts, on recorded sessions and in a simulated replay.

Session table: for every assistant message i that carries ``usage`` the provider counted the prompt
that produced it (system prompt + tools + messages before i) as ``input + cache_read +
cache_write``; ``context::count-tokens`` of that same prefix is divided by it, per estimator and
with ``count_calibration: usage``; "P/E min" and "P/E max" are the extremes of the provider's count
over the estimate (the ratio the other way up). "auto" counts with o200k_base (the sessions ran on
DeepSeek and Llama models, which ship no tokenizer here, so it is asked for as ``gpt-4o``).

Replay table: a simulated provider (o200k_base plus hidden framing per message) writes ``usage``
into each assistant message from the context ``context::assemble`` returned for it; a context
assemble called fitting whose provider count exceeds the budget is an over-window call. The
replay counts with the heuristic (``deepseek-chat``); ``estimator="tokenizer"`` counts with
o200k_base (``gpt-4o``, ``estimator: auto``), and ``provider_scale`` multiplies the provider's
count (1.2: a vocabulary that needs 1.2 tokens for each o200k token, as Llama's can).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from context_manager import CallError, call
from context_manager.core.counting.calibration import (
    SHARED_LEDGER,
    provider_prompt_tokens,
)

MODES = {
    "heuristic": ("deepseek-chat", {}),
    "heuristic+usage": ("deepseek-chat", {"count_calibration": "usage"}),
    "auto(o200k)": ("gpt-4o", {"estimator": "auto"}),
    "auto(o200k)+usage": ("gpt-4o", {"estimator": "auto", "count_calibration": "usage"}),
}
BIG_PROMPT = 8000
MODEL_LIMITS = {"context_window": 1_000_000, "max_output_tokens": 8192}


def load(path: Path) -> dict[str, Any]:
    return orjson.loads(path.read_bytes())


def _request(session: dict[str, Any], model_id: str, messages: list[dict[str, Any]],
             limits: dict[str, int] = MODEL_LIMITS) -> dict[str, Any]:
    request: dict[str, Any] = {"model": {"id": model_id, "limits": limits}, "messages": messages}
    if session.get("system_prompt") is not None:
        request["system_prompt"] = session["system_prompt"]
    if session.get("tools"):
        request["tools"] = session["tools"]
    return request


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _summary(ratios: list[float], big: list[float]) -> dict[str, Any]:
    errors = [abs(r - 1) for r in ratios]
    return {
        "calls": len(ratios), "median": statistics.median(ratios), "p5": _percentile(ratios, 0.05),
        "p95": _percentile(ratios, 0.95), "worst": max(ratios, key=lambda r: abs(r - 1)),
        "p95_abs_error": _percentile(errors, 0.95),
        "big_calls": len(big), "big_worst_abs_error": max((abs(r - 1) for r in big), default=0.0),
        # The provider's count over the estimate (P / E), the other way up: its extremes.
        "pe_min": 1 / max(ratios), "pe_max": 1 / min(ratios),
    }


def session_table(folder: Path) -> list[dict[str, Any]]:
    """Per recorded session with usage: estimate / provider count per mode."""
    rows = []
    pooled: dict[str, tuple[list[float], list[float]]] = {mode: ([], []) for mode in MODES}
    for path in sorted(folder.glob("*.json")):
        session = load(path)
        messages = session["messages"]
        calls = [(i, provider_prompt_tokens(m)) for i, m in enumerate(messages)]
        calls = [(i, n) for i, n in calls if n > 0]
        if not calls:
            continue
        row: dict[str, Any] = {"session": path.stem, "modes": {}}
        for mode, (model_id, config) in MODES.items():
            ratios, big = [], []
            for index, provider in calls:
                counted = call("context::count-tokens", _request(session, model_id, messages[:index]),
                               config=config)["tokens"]
                ratios.append(counted / provider)
                if provider >= BIG_PROMPT:
                    big.append(counted / provider)
            row["modes"][mode] = _summary(ratios, big)
            pooled[mode][0].extend(ratios)
            pooled[mode][1].extend(big)
        rows.append(row)
    if rows:
        rows.append({"session": "all (pooled)",
                     "modes": {mode: _summary(r, b) for mode, (r, b) in pooled.items()}})
    return rows


class SimulatedProvider:
    """A provider whose count differs from every estimator: o200k_base tokens of each message's
    text plus hidden framing per message and per request."""

    PER_MESSAGE = 7
    PER_REQUEST = 60

    def __init__(self, scale: float = 1.0) -> None:
        from context_manager.adapters.tokenizers import tokenizer_for_encoding

        self.scale = scale
        tokenizer = tokenizer_for_encoding("o200k_base")
        if tokenizer is None:
            raise RuntimeError("o200k_base is unavailable")
        self._tokenizer = tokenizer

    def count(self, system_prompt: str, tools: Iterable[dict[str, Any]], messages: list[dict[str, Any]]) -> int:
        t = self._tokenizer
        return int(self.scale * (self.PER_REQUEST + t.text(system_prompt) + sum(t.function(f) for f in tools)
                + sum(t.message(m) + self.PER_MESSAGE for m in messages)))


REPLAY_ESTIMATORS = {"heuristic": ("deepseek-chat", {}), "tokenizer": ("gpt-4o", {"estimator": "auto"})}


def replay_row(path: Path, provider: SimulatedProvider, window: int, calibration: str,
               estimator: str = "heuristic") -> dict[str, Any]:
    """One session replayed call by call through assemble at ``window``; usage is simulated."""
    model_id, estimator_config = REPLAY_ESTIMATORS[estimator]
    session = load(path)
    recorded = session["messages"]
    limits = {"context_window": window, "max_output_tokens": window // 8}
    config = {"count_calibration": calibration, "summarizer_fallback": "extractive",
              "overflow_fallback": "drop_oldest", **estimator_config}
    history: list[dict[str, Any]] = []
    calls = over = over_usable = overflows = 0
    worst = 0.0
    window_input = window - limits["max_output_tokens"]  # what the provider accepts
    SHARED_LEDGER.clear()  # each replay starts as a fresh worker would
    for message in recorded:
        if message["role"] == "assistant" and history:
            calls += 1
            try:
                answer = call("context::assemble", _request(session, model_id, history, limits), config=config)
            except CallError as exc:  # context/overflow: the call is not sent
                if "context/overflow" not in exc.message:
                    raise
                overflows += 1
                history.append({k: v for k, v in message.items() if k != "usage"})
                continue
            sent = provider.count(answer["system_prompt"], session.get("tools") or [], answer["messages"])
            over += sent > window_input
            over_usable += sent > answer["usable"]
            worst = max(worst, sent / window_input)
            message = {**{k: v for k, v in message.items() if k != "usage"},
                       "usage": {"input": sent, "output": 1}}
        history.append(message)
    return {"session": path.stem, "window": window, "calibration": calibration,
            "estimator": estimator, "provider_scale": provider.scale, "calls": calls,
            "over_window": over, "over_usable": over_usable, "overflows": overflows, "worst_fill": worst}


def replay_table(folder: Path, window: int, estimator: str = "heuristic",
                 provider_scale: float = 1.0) -> list[dict[str, Any]]:
    provider = SimulatedProvider(provider_scale)
    rows = []
    for path in sorted(folder.glob("*.json")):
        for calibration in ("off", "usage"):
            rows.append(replay_row(path, provider, window, calibration, estimator))
    return rows


def render(sessions: list[dict[str, Any]], replay: list[dict[str, Any]]) -> str:
    header = (f"{'session':<32} {'mode':<18} {'calls':>5} {'median':>7} {'p5':>7} {'p95':>7} {'worst':>7} "
              f"{'p95|e|':>7} {'>=8k':>5} {'worst|e|>=8k':>12} {'P/E min':>7} {'P/E max':>7}")
    lines = ["estimate / provider count per call (recorded usage)", header]
    for row in sessions:
        for mode, s in row["modes"].items():
            lines.append(f"{row['session']:<32} {mode:<18} {s['calls']:>5} {s['median']:>7.3f} {s['p5']:>7.3f} "
                         f"{s['p95']:>7.3f} {s['worst']:>7.3f} {s['p95_abs_error']:>7.3f} {s['big_calls']:>5} "
                         f"{s['big_worst_abs_error']:>12.3f} {s['pe_min']:>7.3f} {s['pe_max']:>7.3f}")
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in replay:
        groups.setdefault((r.get("estimator", "heuristic"), r.get("provider_scale", 1.0)), []).append(r)
    for (estimator, scale), rows in groups.items():
        title = "simulated replay (o200k_base + framing writes usage"
        if (estimator, scale) != ("heuristic", 1.0):
            title += f", {estimator} estimator, provider count x {scale:g}"
        lines += ["", title + "): calls over the window",
                  f"{'session':<32} {'window':>7} {'calibration':<11} {'calls':>5} {'over':>5} {'>usable':>7} {'overflow':>8} {'worst fill':>10}"]
        for r in rows:
            lines.append(f"{r['session']:<32} {r['window']:>7} {r['calibration']:<11} {r['calls']:>5} "
                         f"{r['over_window']:>5} {r['over_usable']:>7} {r['overflows']:>8} {r['worst_fill']:>10.3f}")
    return "\n".join(lines)

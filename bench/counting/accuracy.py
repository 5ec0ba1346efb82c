"""How far the byte heuristic is from exact token counts, and what exact counts cost.

    python -m bench.counting.accuracy [--sessions 40] [--seed 7] [--timing-mb 1.5] [--repeat 3] [--json]
                             [--realdata ../shared/realdata] [--replay-windows 8000,16000,32000]

For seeded synthetic sessions (prose, code, JSON results, CJK, emoji, tool calls) it reports the
ratio heuristic / tokenizer per message and per session (min, median, max) for each shipped
encoding, broken down by the kind of content too. A ratio below 1 means the heuristic
under-counts. The timing part counts ~1.5 MB of mixed messages cold (empty cache), compares with
tiktoken's own ``encode_ordinary_batch`` of the same texts, and recounts them warm (cached).

With ``--realdata`` (a folder of recorded sessions), it adds the real-session tables of
``bench.counting.realsessions``: estimate / provider count per call for each estimator with and without
``count_calibration: usage``, and the simulated-provider replay at each of ``--replay-windows``;
``--replay-tokenizer-scales 1,1.2`` adds the replay counted with o200k_base (``estimator: auto``)
against a provider whose count is that many times the simulated one.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from context_manager.adapters.tokenizers import TokenizerEstimator, tokenizer_for_encoding
from context_manager.adapters.tokenizers.cache import TokenCountCache
from context_manager.adapters.tokenizers.encodings import SPECS
from context_manager.adapters.tokenizers.estimator import message_pieces
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire import decode as t

WORDS = (
    "the context window of a model limits how much history fits so older turns are summarised "
    "while recent ones stay verbatim and every tool result is capped before it reaches the "
    "provider because large outputs crowd out the conversation budget tokens estimate prune "
    "lease worker engine function invocation schema request response latency throughput"
).split()
CJK = "上下文窗口限制了模型能看到的历史较早的对话会被总结最近的保持原样工具结果在发送前会被截断以免挤占对话预算"
KANA = "これはテストの文章ですモデルは過去の会話を要約して新しい会話を保持します"
EMOJI = ["🚀", "✅", "🔥", "👩‍💻", "📦", "🧪", "⚠️", "🎉"]
IDENTS = ["request", "budget", "tokens", "messages", "summary", "lease", "window", "result", "index"]


def prose(rng: random.Random, words: int) -> str:
    out: list[str] = []
    for i in range(words):
        w = rng.choice(WORDS)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out) + "."


def code(rng: random.Random, lines: int) -> str:
    out = []
    for _ in range(lines):
        a, b = rng.sample(IDENTS, 2)
        out.append(rng.choice([
            f"def {a}_{b}({a}: int, {b}: list[str]) -> dict:",
            f"    {a} = [{b}[i] for i in range(len({b})) if i % {rng.randint(2, 9)}]",
            f"    if {a} is None:\n        raise ValueError(\"{a} missing\")",
            f"    return {{\"{a}\": {a}, \"{b}\": {rng.randint(0, 10000)}}}",
            f"for {a} in {b}:\n    print(f\"{{{a}!r}}\")",
        ]))
    return "\n".join(out) + "\n"


def json_blob(rng: random.Random, items: int) -> str:
    rows = [{"id": rng.randint(1, 10**6), "name": rng.choice(IDENTS), "score": round(rng.random(), 4),
             "tags": rng.sample(WORDS, 3)} for _ in range(items)]
    return orjson.dumps({"rows": rows, "total": items}).decode()


def cjk(rng: random.Random, chars: int) -> str:
    source = rng.choice([CJK, KANA])
    return "".join(rng.choice(source) for _ in range(chars))


def emoji_chat(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(EMOJI) if rng.random() < 0.3 else rng.choice(WORDS) for _ in range(words))


GENERATORS = {
    "prose": lambda rng, scale: prose(rng, 20 * scale),
    "code": lambda rng, scale: code(rng, 4 * scale),
    "json": lambda rng, scale: json_blob(rng, 2 * scale),
    "cjk": lambda rng, scale: cjk(rng, 30 * scale),
    "emoji": lambda rng, scale: emoji_chat(rng, 15 * scale),
}
KIND_WEIGHTS = {"prose": 5, "code": 3, "json": 2, "cjk": 1, "emoji": 1}


def pick_kind(rng: random.Random) -> str:
    return rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]


def session(rng: random.Random, turns: int, scale: int = 3) -> list[tuple[str, dict[str, Any]]]:
    """(content kind, canonical message) pairs of one synthetic session."""
    out: list[tuple[str, dict[str, Any]]] = []
    ts = 1_700_000_000_000
    for turn in range(turns):
        ts += rng.randint(1000, 60000)
        kind = pick_kind(rng)
        out.append((kind, {"role": "user", "content": [{"type": "text", "text": GENERATORS[kind](rng, 1 + rng.randint(0, scale))}],
                           "timestamp": ts}))
        for call_no in range(rng.randint(0, 2)):
            call_id = f"call_{turn}_{call_no}"
            function_id = rng.choice(["fs::read", "shell::run", "search::web", "db::query"])
            out.append(("call", {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": prose(rng, rng.randint(5, 40))},
                    {"type": "function_call", "id": call_id, "function_id": function_id,
                     "arguments": {"path": f"/src/{rng.choice(IDENTS)}.py", "limit": rng.randint(1, 500)}},
                ],
                "stop_reason": "function_call", "model": "gpt-4o", "provider": "openai", "timestamp": ts,
            }))
            result_kind = rng.choice(["code", "json", "prose"])
            out.append((result_kind, {
                "role": "function_result", "function_call_id": call_id, "function_id": function_id,
                "content": [{"type": "text", "text": GENERATORS[result_kind](rng, 2 + rng.randint(0, 4 * scale))}],
                "details": {"exit": 0, "elapsed_ms": rng.randint(1, 900)}, "is_error": False, "timestamp": ts,
            }))
        kind = pick_kind(rng)
        out.append((kind, {
            "role": "assistant", "content": [{"type": "text", "text": GENERATORS[kind](rng, 1 + rng.randint(0, scale))}],
            "stop_reason": "end", "usage": {"input": rng.randint(100, 90000), "output": rng.randint(10, 4000)},
            "model": "gpt-4o", "provider": "openai", "timestamp": ts,
        }))
    decoded = t.decode_messages([m for _, m in out])
    return [(kind, m) for (kind, _), m in zip(out, decoded)]


def summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def accuracy(sessions: list[list[tuple[str, dict[str, Any]]]], est: TokenizerEstimator) -> dict[str, Any]:
    per_message: list[float] = []
    per_kind: dict[str, list[float]] = {}
    per_session: list[float] = []
    for s in sessions:
        h_total = k_total = 0
        for kind, m in s:
            h, k = HEURISTIC.message(m), est.message(m)
            h_total += h
            k_total += k
            per_message.append(h / k)
            per_kind.setdefault(kind, []).append(h / k)
        per_session.append(h_total / k_total)
    return {
        "messages": len(per_message),
        "per_message": summary(per_message),
        "per_session": summary(per_session),
        "per_kind": {kind: summary(values) | {"n": len(values)} for kind, values in sorted(per_kind.items())},
    }


def timing(target_bytes: int, seed: int, encoding_name: str, repeat: int = 3) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    messages: list[dict[str, Any]] = []
    size = 0
    while size < target_bytes:
        for _, m in session(rng, 10, scale=8):
            messages.append(m)
            size += sum(len(p.encode()) for p in message_pieces(m)[0])
    texts = [p for m in messages for p in message_pieces(m)[0] if p]
    shared = tokenizer_for_encoding(encoding_name)
    assert shared is not None, encoding_name
    best: dict[str, float] = {}
    totals: dict[str, int] = {}

    def clock(label: str, run: Callable[[], int]) -> None:
        started = time.perf_counter()
        totals[label] = run()
        elapsed = time.perf_counter() - started
        best[label] = min(elapsed, best.get(label, elapsed))

    for _ in range(repeat):  # best of `repeat`: the machine is shared
        est = TokenizerEstimator(shared.encoding, TokenCountCache(max_bytes=64 * 1024 * 1024))
        clock("cold", lambda: sum(est.message(m) for m in messages))
        clock("batch", lambda: sum(len(ids) for ids in shared.encoding.encode_ordinary_batch(texts)))
        clock("loop", lambda: sum(len(shared.encoding.encode_ordinary(s)) for s in texts))
        clock("warm", lambda: sum(est.message(m) for m in messages))
    cold_total, batch_total, loop_total, warm_total = (totals[k] for k in ("cold", "batch", "loop", "warm"))
    cold, batch, loop, warm = (best[k] for k in ("cold", "batch", "loop", "warm"))

    framing = 4 * len(messages)  # the generator makes no images
    if not cold_total == warm_total == batch_total + framing == loop_total + framing:
        raise RuntimeError(f"counts disagree: {cold_total} {warm_total} {batch_total} {loop_total} + {framing}")
    return {
        "encoding": encoding_name, "messages": len(messages), "texts": len(texts),
        "text_bytes": size, "tokens": cold_total,
        "repeat": repeat, "cold_estimator_s": cold, "tiktoken_batch_s": batch, "tiktoken_loop_s": loop, "warm_estimator_s": warm,
    }


REPLAY_MODEL = "gpt-4o"  # an o200k_base model: `estimator: auto` counts it with the tokenizer


def replay_compactions(budget: str) -> list[dict[str, Any]]:
    """Compactions and overflows of each recorded session, replayed with each estimator."""
    from bench.kit.loop import Call, round_trip
    from bench.kit.modes import BUDGETS, Mode
    from bench.kit.sessions import Session, shipped_sessions

    modes = {"heuristic": Mode("heuristic", True, {}),
             "tokenizer": Mode("tokenizer", True, {"estimator": "auto"})}
    rows = []
    for recorded in shipped_sessions():
        row: dict[str, Any] = {"session": recorded.name, "budget": budget}
        for name, mode in modes.items():
            compacted = 0

            def observe(_session: Session, call: Call) -> None:
                nonlocal compacted
                compacted += call.response is not None and bool(call.response["applied"]["compacted"])

            ledger = round_trip(recorded, mode, BUDGETS[budget], model_id=REPLAY_MODEL, observer=observe)
            row[name] = {"calls": ledger.calls, "compactions": compacted,
                         "overflows": ledger.overflows, "input_tokens": ledger.sent}
        rows.append(row)
    return rows


def render(report: dict[str, Any]) -> str:
    lines = [f"sessions: {report['sessions']} (seed {report['seed']})", ""]
    lines.append("ratio heuristic/tokenizer (below 1: the heuristic under-counts)")
    lines.append(f"{'encoding':<12} {'scope':<16} {'n':>6} {'min':>7} {'median':>7} {'max':>7}")
    for name, acc in report["accuracy"].items():
        rows = [("message", acc["messages"], acc["per_message"]),
                ("session", report["sessions"], acc["per_session"])]
        rows += [(f"  {kind}", s["n"], s) for kind, s in acc["per_kind"].items()]
        for scope, count, s in rows:
            lines.append(f"{name:<12} {scope:<16} {count:>6} {s['min']:>7.3f} {s['median']:>7.3f} {s['max']:>7.3f}")
    lines.append("")
    for tm in report["timing"]:
        mb = tm["text_bytes"] / 1e6
        lines.append(f"timing {tm['encoding']}: {tm['messages']} messages, {tm['texts']} texts, {mb:.2f} MB, "
                     f"{tm['tokens']} tokens, best of {tm['repeat']}")
        lines.append(f"  cold estimator (empty cache)      {tm['cold_estimator_s'] * 1000:8.1f} ms")
        lines.append(f"  tiktoken encode_ordinary_batch    {tm['tiktoken_batch_s'] * 1000:8.1f} ms")
        lines.append(f"  tiktoken encode_ordinary loop     {tm['tiktoken_loop_s'] * 1000:8.1f} ms")
        lines.append(f"  warm estimator (cached recount)   {tm['warm_estimator_s'] * 1000:8.1f} ms")
    if report.get("replay"):
        lines.append("")
        lines.append(f"replay on {REPLAY_MODEL} with a summariser: compactions (overflows) per estimator")
        lines.append(f"{'session':<30} {'budget':<7} {'calls':>6} {'heuristic':>12} {'tokenizer':>12}")
        for row in report["replay"]:
            h, t = row["heuristic"], row["tokenizer"]
            lines.append(f"{row['session']:<30} {row['budget']:<7} {h['calls']:>6} "
                         f"{h['compactions']:>7} ({h['overflows']:>2}) {t['compactions']:>7} ({t['overflows']:>2})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timing-mb", type=float, default=1.5)
    parser.add_argument("--repeat", type=int, default=3, help="timing runs; the best is reported")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--replay-budget", default="32k",
                        help="replay the recorded sessions at this budget with each estimator ('' to skip)")
    parser.add_argument("--realdata", default="",
                        help="folder of recorded sessions with usage (e.g. ../shared/realdata)")
    parser.add_argument("--replay-windows", default="8000,16000,32000",
                        help="context windows of the simulated-provider replay of --realdata")
    parser.add_argument("--replay-tokenizer-scales", default="",
                        help="also replay with the tokenizer estimator, the provider's count times each")
    parser.add_argument("--realdata-only", action="store_true", help="only the --realdata tables")
    args = parser.parse_args(argv)
    if args.realdata:
        from pathlib import Path

        from bench.counting import realsessions

        folder = Path(args.realdata)
        real = {"sessions": realsessions.session_table(folder),
                "replay": [row for w in args.replay_windows.split(",") if w
                           for row in realsessions.replay_table(folder, int(w))]}
        real["replay"] += [row for scale in args.replay_tokenizer_scales.split(",") if scale
                           for w in args.replay_windows.split(",") if w
                           for row in realsessions.replay_table(folder, int(w), "tokenizer", float(scale))]
        text = realsessions.render(real["sessions"], real["replay"])
        if args.realdata_only:
            print(orjson.dumps(real, option=orjson.OPT_INDENT_2).decode() if args.json else text)
            return 0

    rng = random.Random(args.seed)
    sessions = [session(rng, args.turns) for _ in range(args.sessions)]
    report: dict[str, Any] = {"sessions": args.sessions, "seed": args.seed, "accuracy": {}, "timing": []}
    for name in sorted(SPECS, reverse=True):
        est = tokenizer_for_encoding(name)
        if est is None:
            print(f"{name}: encoding unavailable", file=sys.stderr)
            return 1
        report["accuracy"][name] = accuracy(sessions, est)
    if args.timing_mb > 0:
        for name in sorted(SPECS, reverse=True):
            report["timing"].append(timing(int(args.timing_mb * 1e6), args.seed, name, args.repeat))
    if args.replay_budget:
        report["replay"] = replay_compactions(args.replay_budget)
    if args.realdata:
        report["realdata"] = real
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() if args.json else render(report))
    if args.realdata and not args.json:
        print()
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

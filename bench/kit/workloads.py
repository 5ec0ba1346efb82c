"""Deterministic, seeded agent histories as wire JSON (plain dicts, ready for ``orjson.dumps``).

A session is a sequence of rounds: a user turn (sometimes with an image), one to five tool
rounds (an assistant message with thinking, optional text and one or two function calls, then
one result per call), and a closing assistant answer. A few custom messages are sprinkled in.
Function results carry logs, source code, JSON documents or multilingual prose, sized so the
whole request lands near the workload's byte target.

The same seed always yields the same bytes: every random choice comes from one
``random.Random(seed)`` and nothing reads the clock or the environment.
"""

from __future__ import annotations

import base64
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

MODEL_ID = "claude-sonnet-4-5"
PROVIDER = "anthropic"
CONTEXT_WINDOW = 200_000
MAX_OUTPUT_TOKENS = 8_000
START_MS = 1_764_460_800_000  # 2025-11-30T00:00:00Z

RESULT_MIN = 200
RESULT_MAX = 60_000
BIG_RESULT_MIN = 100_000
BIG_RESULT_MAX = 200_000
# Results at most this many UTF-8 bytes are never "verbose" for the default prune settings.
QUIET_RESULT_MAX = 1_900

Message = dict[str, Any]

_FUNCTIONS = (
    ("shell::run", "log"),
    ("fs::read_file", "code"),
    ("search::grep", "log"),
    ("http::fetch", "json"),
    ("db::query", "json"),
    ("git::diff", "code"),
    ("docs::lookup", "prose"),
)

_WORDS = (
    "request handler worker budget token stream channel lease summary history window "
    "prune compact result function message queue retry timeout config engine router model "
    "latency cache index build deploy schema payload session cursor offset limit"
).split()
_PROSE = (
    "La température du serveur est élevée après le déploiement; vérifiez les journaux.",
    "Die Überprüfung der Konfigurationsdatei ist fehlgeschlagen — Schlüssel fehlt.",
    "ビルドは正常に完了しました。テストは全て合格です。",
    "Запрос завершился с ошибкой: превышено время ожидания ответа.",
    "部署完成 ✓ 下一步：运行集成测试并检查覆盖率。",
    "El análisis terminó sin errores críticos 🚀 pero hay tres advertencias.",
    "The migration finished; 42 rows were rewritten and the index was rebuilt.",
)
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


@dataclass(frozen=True)
class Workload:
    name: str
    function_id: str
    payload: dict[str, Any]

    def request_bytes(self) -> bytes:
        return orjson.dumps(self.payload)


# --- text of a given size ------------------------------------------------------------------


class _Texts:
    """Line pools drawn once per session, then sliced into texts of an exact byte size."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pools = {
            "log": [self._log_line(i) for i in range(600)],
            "code": [self._code_line() for _ in range(600)],
            "json": [self._json_line(i) for i in range(400)],
            "prose": [self._prose_line() for _ in range(300)],
        }

    def _log_line(self, i: int) -> str:
        r = self.rng
        return (
            f"2025-11-30T{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}."
            f"{r.randrange(1000):03d}Z {r.choice(_LEVELS):5} worker[{r.randrange(1000, 9999)}]: "
            f"{r.choice(_WORDS)} {r.choice(_WORDS)} id={r.getrandbits(48):012x} "
            f"latency_ms={r.randrange(1, 5000)} path=/api/v1/{r.choice(_WORDS)}/{i} "
            f"status={r.choice((200, 200, 200, 201, 404, 500))}"
        )

    def _code_line(self) -> str:
        r = self.rng
        a, b, c = r.choice(_WORDS), r.choice(_WORDS), r.choice(_WORDS)
        return r.choice(
            (
                f"def {a}_{b}(self, {c}: int = {r.randrange(100)}) -> dict[str, Any]:",
                f"    {a} = self.{b}.get(\"{c}\", {r.randrange(1000)})",
                f"    if {a} is None or len({b}) > {r.randrange(4096)}:",
                f"        raise ValueError(f\"{a} {{ {b} }} out of range\")",
                f"    return {{\"{a}\": {b}, \"{c}\": {r.random():.3f}}}",
                f"class {a.title()}{b.title()}({c.title()}Base):",
                f"    # keep the {a} ordered so the {b} stays stable across calls",
                f"    for {a} in sorted(self.{b}, key=lambda x: x.{c}):",
                "",
            )
        )

    def _json_line(self, i: int) -> str:
        r = self.rng
        record = {
            "id": i,
            "name": f"{r.choice(_WORDS)}-{r.randrange(10000)}",
            "score": round(r.random() * 100, 3),
            "tags": [r.choice(_WORDS) for _ in range(r.randrange(1, 4))],
            "active": r.random() < 0.7,
            "owner": {"login": r.choice(_WORDS), "uid": r.randrange(1 << 20)},
        }
        return orjson.dumps(record).decode() + ","

    def _prose_line(self) -> str:
        r = self.rng
        return " ".join(r.choice(_PROSE) for _ in range(r.randrange(1, 4)))

    def sized(self, kind: str, size: int) -> str:
        """A text of ``kind`` whose UTF-8 length is ``size`` (less up to 3 bytes at a cut character)."""
        pool = self.pools[kind]
        r = self.rng
        lines: list[str] = []
        total = 0
        start = r.randrange(len(pool))
        i = start
        while total < size:
            line = pool[i % len(pool)]
            lines.append(line)
            total += len(line.encode()) + 1
            i += r.randrange(1, 7)
        data = "\n".join(lines).encode()[:size]
        return data.decode("utf-8", "ignore")

    def words(self, low: int, high: int) -> str:
        r = self.rng
        return " ".join(r.choice(_WORDS) for _ in range(r.randrange(low, high)))


# --- messages --------------------------------------------------------------------------------


class _Session:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.texts = _Texts(self.rng)
        self.clock = START_MS
        self.call_serial = 0

    def tick(self) -> int:
        self.clock += self.rng.randrange(500, 90_000)
        return self.clock

    def user(self, with_image: bool = False) -> Message:
        r = self.rng
        text = self.texts.words(8, 60)
        if r.random() < 0.25:
            text += " " + r.choice(_PROSE)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if with_image:
            raw = r.randbytes(r.randrange(3_000, 9_000))
            content.append({"type": "image", "mime": "image/png", "data": base64.b64encode(raw).decode()})
        return {"role": "user", "content": content, "timestamp": self.tick()}

    def _arguments(self, function_id: str) -> dict[str, Any]:
        r = self.rng
        w = self.texts.words
        if function_id == "shell::run":
            return {"command": f"pytest -x tests/test_{r.choice(_WORDS)}.py", "cwd": "/repo",
                    "timeout_ms": r.choice((30_000, 120_000)), "env": {"PYTHONHASHSEED": "0"}}
        if function_id == "fs::read_file":
            return {"path": f"src/{r.choice(_WORDS)}/{r.choice(_WORDS)}.py", "offset": r.randrange(400),
                    "limit": r.choice((200, 400, 2000))}
        if function_id == "search::grep":
            return {"pattern": f"def {r.choice(_WORDS)}_", "paths": ["src", "tests"], "max_hits": 200}
        if function_id == "http::fetch":
            return {"url": f"https://api.example.test/v2/{r.choice(_WORDS)}?page={r.randrange(9)}",
                    "headers": {"Accept": "application/json"}, "retry": {"attempts": 3, "backoff": 1.5}}
        if function_id == "db::query":
            return {"sql": f"SELECT * FROM {r.choice(_WORDS)} WHERE score > {r.random():.2f} LIMIT 500",
                    "params": [], "read_only": True}
        if function_id == "git::diff":
            return {"base": "main", "paths": [f"src/{r.choice(_WORDS)}.py"], "context_lines": 3}
        return {"query": w(2, 6), "language": r.choice(("fr", "de", "ja", "ru", "zh", "es")), "top_k": 5}

    def assistant_calls(self, count: int) -> tuple[Message, list[tuple[str, str, str]]]:
        r = self.rng
        content: list[dict[str, Any]] = []
        content.append({"type": "thinking", "text": self.texts.words(10, 80),
                        "signature": base64.b64encode(r.randbytes(48)).decode()})
        if r.random() < 0.5:
            content.append({"type": "text", "text": self.texts.words(5, 40)})
        calls = []
        for _ in range(count):
            function_id, kind = r.choice(_FUNCTIONS)
            self.call_serial += 1
            call_id = f"toolu_{self.call_serial:06d}_{r.getrandbits(40):010x}"
            content.append({"type": "function_call", "id": call_id, "function_id": function_id,
                            "arguments": self._arguments(function_id)})
            calls.append((call_id, function_id, kind))
        return self._assistant(content, "function_call"), calls

    def assistant_answer(self) -> Message:
        r = self.rng
        content: list[dict[str, Any]] = []
        if r.random() < 0.6:
            content.append({"type": "thinking", "text": self.texts.words(10, 60)})
        content.append({"type": "text", "text": self.texts.words(20, 150)})
        return self._assistant(content, "end")

    def _assistant(self, content: list[dict[str, Any]], stop_reason: str) -> Message:
        r = self.rng
        usage = {"input": r.randrange(1_000, 150_000), "output": r.randrange(50, 4_000),
                 "cache_read": r.randrange(0, 100_000), "cost_usd": round(r.random() / 10, 6)}
        return {"role": "assistant", "content": content, "stop_reason": stop_reason, "usage": usage,
                "model": MODEL_ID, "provider": PROVIDER, "timestamp": self.tick()}

    def result(self, call_id: str, function_id: str, kind: str, size: int) -> Message:
        r = self.rng
        roll = r.random()
        if roll < 0.6:
            details: Any = {"exit_code": 0 if r.random() < 0.9 else 1, "duration_ms": r.randrange(5, 60_000)}
        elif roll < 0.97:
            details = None
        else:
            details = {"status": "denied", "reason": "path outside the workspace"}
        return {"role": "function_result", "function_call_id": call_id, "function_id": function_id,
                "content": [{"type": "text", "text": self.texts.sized(kind, size)}],
                "details": details, "is_error": r.random() < 0.04, "timestamp": self.tick()}

    def custom(self) -> Message:
        return {"role": "custom", "custom_type": "ui_note", "content": [{"type": "text", "text": self.texts.words(5, 30)}],
                "display": "note", "details": {"pinned": self.rng.random() < 0.5}, "timestamp": self.tick()}


# --- sessions --------------------------------------------------------------------------------


@dataclass
class _Slot:
    """A planned function result: who called it and how heavy it should be."""

    index: int
    call_id: str
    function_id: str
    kind: str
    weight: float
    big: bool = False
    size: int = RESULT_MIN


def _plan(session: _Session, n_messages: int, images: int) -> tuple[list[Any], list[_Slot]]:
    """Messages in order, with a :class:`_Slot` standing where each function result goes."""
    r = session.rng
    out: list[Any] = []
    slots: list[_Slot] = []
    image_turns = set(r.sample(range(max(1, n_messages // 8)), k=min(images, max(1, n_messages // 8))))
    turn = 0
    while len(out) < n_messages:
        out.append(session.user(with_image=turn in image_turns))
        turn += 1
        for _ in range(r.choice((1, 2, 3, 3, 4, 5))):
            message, calls = session.assistant_calls(2 if r.random() < 0.2 else 1)
            out.append(message)
            for call_id, function_id, kind in calls:
                slot = _Slot(len(out), call_id, function_id, kind, r.lognormvariate(0, 1.0))
                slots.append(slot)
                out.append(slot)
        if r.random() < 0.08:
            out.append(session.custom())
        out.append(session.assistant_answer())
    del out[n_messages:]
    return out, [s for s in slots if s.index < n_messages]


def _fill(session: _Session, plan: list[Any]) -> list[Message]:
    return [session.result(s.call_id, s.function_id, s.kind, s.size) if isinstance(s, _Slot) else s for s in plan]


def _assign_sizes(slots: list[_Slot], budget: int, low: int, high: int) -> None:
    """Spread ``budget`` bytes over the slots by weight, clamped to [low, high]."""
    free = list(slots)
    remaining = budget
    while free:
        total_weight = sum(s.weight for s in free)
        clamped = []
        for s in free:
            size = remaining * s.weight / total_weight if total_weight else low
            if size < low or size > high:
                s.size = low if size < low else high
                clamped.append(s)
        if not clamped:
            for s in free:
                s.size = max(low, min(high, int(remaining * s.weight / total_weight)))
            return
        remaining -= sum(s.size for s in clamped)
        free = [s for s in free if s not in clamped]
        remaining = max(remaining, low * len(free))


def _placeholder_bytes(plan: list[Any]) -> int:
    return sum(len(orjson.dumps(m)) + 1 for m in plan if not isinstance(m, _Slot))


def build_session(
    seed: int,
    n_messages: int,
    target_bytes: int,
    *,
    images: int = 3,
    big_results: int = 0,
    quiet_before: float = 0.0,
) -> list[Message]:
    """A history of exactly ``n_messages`` whose serialization is within ~2% of ``target_bytes``.

    ``big_results`` results get 100–200 KB (spread over the history: oldest, middle, newest);
    results in the first ``quiet_before`` fraction of the history stay short enough that the
    default prune never finds them verbose.
    """
    aim = target_bytes
    for _ in range(3):
        messages = _build(seed, n_messages, aim, images, big_results, quiet_before)
        actual = sum(len(orjson.dumps(m)) + 1 for m in messages)
        if abs(actual - target_bytes) <= target_bytes // 50:
            break
        # JSON escaping of newlines and quotes makes results larger than their text: correct once.
        aim = max(0, aim + target_bytes - actual)
    return messages


def _build(seed: int, n_messages: int, target_bytes: int, images: int, big_results: int,
           quiet_before: float) -> list[Message]:
    session = _Session(seed)
    plan, slots = _plan(session, n_messages, images)
    r = session.rng
    bigs: list[_Slot] = []
    if big_results and slots:
        picks = sorted({round(i * (len(slots) - 1) / max(1, big_results - 1)) for i in range(big_results)})
        for i in picks:
            slots[i].big = True
            slots[i].size = r.randrange(BIG_RESULT_MIN, BIG_RESULT_MAX)
            bigs.append(slots[i])
    quiet_limit = int(n_messages * quiet_before)
    quiet = [s for s in slots if not s.big and s.index < quiet_limit]
    loud = [s for s in slots if not s.big and s.index >= quiet_limit]
    envelope = 220  # bytes of a result message around its text
    fixed = _placeholder_bytes(plan) + sum(s.size + envelope for s in bigs)
    budget = max(0, target_bytes - fixed - envelope * (len(quiet) + len(loud)))
    quiet_share = min(budget * len(quiet) // max(1, len(slots)), QUIET_RESULT_MAX * len(quiet))
    _assign_sizes(quiet, quiet_share, RESULT_MIN, QUIET_RESULT_MAX)
    _assign_sizes(loud, budget - sum(s.size for s in quiet), RESULT_MIN, RESULT_MAX)
    return _fill(session, plan)


def tools(seed: int, count: int = 30) -> list[dict[str, Any]]:
    """Function declarations with JSON-schema parameters, as an agent would register them."""
    r = random.Random(seed)
    out = []
    for i in range(count):
        name = f"{r.choice(_WORDS)}::{r.choice(_WORDS)}_{i}"
        props = {
            f"{r.choice(_WORDS)}_{j}": {"type": r.choice(("string", "integer", "boolean", "number")),
                                         "description": " ".join(r.choice(_WORDS) for _ in range(r.randrange(4, 14)))}
            for j in range(r.randrange(1, 6))
        }
        tool: dict[str, Any] = {
            "name": name,
            "description": " ".join(r.choice(_WORDS) for _ in range(r.randrange(10, 40))),
            "parameters": {"type": "object", "properties": props, "required": sorted(props)[:1],
                           "additionalProperties": False},
        }
        if i % 3 == 0:
            tool["execution_mode"] = r.choice(("parallel", "sequential"))
        out.append(tool)
    return out


SYSTEM_PROMPT = (
    "You are a careful coding agent working in a repository. Use the tools to inspect files, run "
    "tests and fetch documentation. Prefer small, verified steps and explain what you changed."
)


def model_input() -> dict[str, Any]:
    return {"id": MODEL_ID, "provider": PROVIDER,
            "limits": {"context_window": CONTEXT_WINDOW, "max_output_tokens": MAX_OUTPUT_TOKENS}}


def _assemble_request(messages: list[Message], seed: int) -> dict[str, Any]:
    return {"messages": messages, "model": model_input(), "system_prompt": SYSTEM_PROMPT,
            "tools": tools(seed)}


# --- the named workloads ---------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    messages: int
    target_bytes: int
    images: int
    big_results: int = 0
    quiet_before: float = 0.0


FULL = {
    "W1": Shape(200, 300_000, images=3, quiet_before=0.55),
    "W2": Shape(400, 1_500_000, images=4, big_results=3),
    "W3": Shape(2_000, 6_000_000, images=10, big_results=3),
}
QUICK = {
    "W1": FULL["W1"],
    "W2": FULL["W2"],
    "W3": Shape(600, 1_800_000, images=4, big_results=3),
}
W5_CALLS = 50
W5_CALLS_QUICK = 10
DEFAULT_SEED = 1130


def shapes(quick: bool) -> dict[str, Shape]:
    return QUICK if quick else FULL


def session_for(name: str, seed: int = DEFAULT_SEED, quick: bool = False) -> list[Message]:
    s = shapes(quick)[name]
    return build_session(seed + _offset(name), s.messages, s.target_bytes, images=s.images,
                         big_results=s.big_results, quiet_before=s.quiet_before)


def _offset(name: str) -> int:
    return {"W1": 1, "W2": 2, "W3": 3}[name]


def w1(seed: int = DEFAULT_SEED, quick: bool = False) -> Workload:
    return Workload("W1", "context::assemble", _assemble_request(session_for("W1", seed, quick), seed))


def w2(seed: int = DEFAULT_SEED, quick: bool = False) -> Workload:
    return Workload("W2", "context::assemble", _assemble_request(session_for("W2", seed, quick), seed))


def w2_prune(seed: int = DEFAULT_SEED, quick: bool = False) -> Workload:
    payload = {"messages": session_for("W2", seed, quick), "model": model_input()}
    return Workload("W2", "context::prune", payload)


def w3(seed: int = DEFAULT_SEED, quick: bool = False) -> Workload:
    return Workload("W3", "context::assemble", _assemble_request(session_for("W3", seed, quick), seed))


def w4(seed: int = DEFAULT_SEED, quick: bool = False) -> Workload:
    payload = {"messages": session_for("W2", seed, quick), "model": model_input(),
               "system_prompt": SYSTEM_PROMPT, "tools": tools(seed)}
    return Workload("W4", "context::count-tokens", payload)


def w5_growth(seed: int = DEFAULT_SEED, calls: int = W5_CALLS) -> list[list[Message]]:
    """For each call, the three messages it adds: a user turn, one call, its result."""
    session = _Session(seed + 5)
    session.clock = START_MS + 400 * 86_400_000  # after W2's history
    rounds = []
    for _ in range(calls):
        user = session.user()
        message, [(call_id, function_id, kind)] = session.assistant_calls(1)
        size = int(min(RESULT_MAX, max(RESULT_MIN, session.rng.lognormvariate(math.log(3_000), 1.0))))
        rounds.append([user, message, session.result(call_id, function_id, kind, size)])
    return rounds


def w5_histories(seed: int = DEFAULT_SEED, quick: bool = False) -> list[Workload]:
    """W2 grown by one round per call: the request of call 1..N."""
    base = session_for("W2", seed, quick)
    growth = w5_growth(seed, W5_CALLS_QUICK if quick else W5_CALLS)
    out = []
    messages = list(base)
    for i, added in enumerate(growth, start=1):
        messages = messages + added
        out.append(Workload(f"W5#{i}", "context::assemble", _assemble_request(messages, seed)))
    return out


BUILDERS: dict[str, Callable[..., Workload]] = {"W1": w1, "W2": w2, "W2-prune": w2_prune, "W3": w3, "W4": w4}


def shifted(payload: dict[str, Any], delta: int) -> dict[str, Any]:
    """The same request with every message ``delta`` ms later (new dicts, input untouched)."""
    messages = [{**m, "timestamp": m["timestamp"] + delta} for m in payload["messages"]]
    return {**payload, "messages": messages}


def grown(base: dict[str, Any], growth: list[list[dict[str, Any]]], calls: int) -> dict[str, Any]:
    """W5's request before call ``calls``: the base history plus its first ``calls`` growth rounds."""
    added = [m for round_ in growth[:calls] for m in round_]
    return {**base, "messages": base["messages"] + added}

"""The malformed-input corpus: deterministic payloads for every function.

Each case is either the exact bytes a caller sends (``body``: broken JSON, invalid UTF-8,
lone-surrogate escapes, 5,000-level nesting, a 50 MB string, empty bodies) or, for the library
entry only, a decoded Python value (``value``: nesting no JSON text could carry). ``must_fail``
says the payload is invalid; the others are extreme but valid (e.g. a 50 MB text), where an
answer or a clean error are both acceptable — never a traceback.

Cases are generated lazily: the 50 MB ones exist only while they are being sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

PUBLIC = ("context::count-tokens", "context::prune", "context::assemble", "context::compact")
INTERNAL = ("context::on-models-changed", "context::on-config-change", "context-manager::ui-content")
POLICY = ("context::policy::publish", "context::policy::list", "context::policy::activate",
          "context::policy::withdraw", "context::policy::resolve", "context::policy::scopes")
ALL_FUNCTIONS = PUBLIC + INTERNAL + POLICY

# Accepted error texts: a decoding failure or a rule of the function (spec 01 §4.3); the console
# asset function has its own documented kind (spec 04 §4.2).
ERROR_PREFIXES = ("serialization error: ", "handler error: context/")
UI_ERROR_PREFIX = "handler error: UNKNOWN_UI_ASSET: "


def allowed_prefixes(function_id: str) -> tuple[str, ...]:
    if function_id == "context-manager::ui-content":
        return (*ERROR_PREFIXES, UI_ERROR_PREFIX)
    return ERROR_PREFIXES

U64_MAX = 2**64 - 1
MB50 = 50 * 1024 * 1024


@dataclass(frozen=True)
class Case:
    name: str
    function_id: str
    body: bytes | None = None
    make_body: Callable[[], bytes] | None = None
    value: Callable[[], Any] | None = None
    must_fail: bool = True

    def raw(self) -> bytes | None:
        """The bytes a caller sends; ``None`` for a value-only case."""
        if self.make_body is not None:
            return self.make_body()
        return self.body

    @property
    def id(self) -> str:
        return f"{self.function_id}:{self.name}"


def _msg_user(text: str = "hi", ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def _history() -> list[dict[str, Any]]:
    return [
        _msg_user("read the file", 1),
        {"role": "assistant", "content": [{"type": "function_call", "id": "c1", "function_id": "read",
                                           "arguments": {"path": "a.txt"}}],
         "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": 2},
        {"role": "function_result", "function_call_id": "c1", "function_id": "read",
         "content": [{"type": "text", "text": "contents"}], "timestamp": 3},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stop_reason": "end",
         "model": "m", "provider": "p", "timestamp": 4},
    ]


MODEL = {"id": "m", "limits": {"context_window": 4000, "max_output_tokens": 400}}


def base_payload(function_id: str) -> dict[str, Any]:
    """A valid request of each public function."""
    if function_id == "context::prune":
        return {"messages": _history()}
    return {"messages": _history(), "model": dict(MODEL)}


def _json(value: Any) -> bytes:
    # The standard library writes integers of any size (orjson stops at 64 bits).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _with(function_id: str, **changes: Any) -> bytes:
    payload = base_payload(function_id)
    for key, value in changes.items():
        if value is _DROP:
            payload.pop(key, None)
        else:
            payload[key] = value
    return _json(payload)


_DROP = object()


def _with_message(function_id: str, message: Any) -> bytes:
    return _with(function_id, messages=[*_history(), message])


def _with_block(function_id: str, block: Any) -> bytes:
    return _with_message(function_id, {"role": "user", "content": [block], "timestamp": 9})


# ---------------------------------------------------------------- raw bodies (every function)

def _raw_bodies() -> list[tuple[str, bytes]]:
    return [
        ("empty body", b""),
        ("whitespace body", b" \n\t "),
        ("truncated object", b'{"messages": ['),
        ("single quotes", b"{'messages': []}"),
        ("trailing garbage", b'{"messages": []} x'),
        ("bare word", b"nul"),
        ("NaN literal", b'{"messages": [], "x": NaN}'),
        ("invalid utf-8", b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\xff\xfe\xc3"}], "timestamp": 1}], "model": {"id": "m"}, "path": "\xff"}'),
        ("overlong utf-8", b'{"path": "\xc0\xaf", "messages": []}'),
        ("lone high surrogate escape", b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "a\\ud800b"}], "timestamp": 1}], "model": {"id": "m"}, "path": "\\ud800"}'),
        ("lone low surrogate escape in a key", b'{"\\udc00": 1, "messages": [], "model": {"id": "m"}}'),
        ("nesting 5000 deep", b"[" * 5000 + b"]" * 5000),
        ("top-level null", b"null"),
        ("top-level number", b"-1"),
        ("top-level huge number", b"1" + b"0" * 400),
        ("top-level string", b'"context"'),
        ("top-level array", b"[{}]"),
        ("number 1e400", b'{"messages": [], "model": {"id": "m", "limits": {"context_window": 1e400, "max_output_tokens": 1}}}'),
    ]


# ---------------------------------------------------------------- structural cases

def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


# An enum-typed member given each JSON kind: (name, value, must fail).
_ENUM_FORMS: tuple[tuple[str, Any, bool], ...] = (
    ("a number", 5, True),
    ("negative", -5, True),
    ("a float", 1.5, True),
    ("a boolean", True, True),
    ("null", None, True),
    ("a list", ["end"], True),
    ("an empty object", {}, True),
    ("an object of two members", {"end": None, "error": None}, True),
    ("an object naming it", {"end": None}, False),
    ("an object naming it with an empty object", {"end": {}}, False),
    ("an object naming it with a number", {"end": 1}, True),
    ("an object naming no variant", {"done": None}, True),
)


def _structural(function_id: str) -> list[tuple[str, bytes, bool]]:
    f = function_id
    deep = _deep(5000)
    arguments_deep = (
        b'{"messages": [{"role": "assistant", "content": [{"type": "function_call", "id": "c",'
        b' "function_id": "f", "arguments": ' + deep + b'}], "stop_reason": "end", "model": "m",'
        b' "provider": "p", "timestamp": 1}], "model": {"id": "m"}}'
    )
    cases: list[tuple[str, bytes, bool]] = [
        ("empty object", b"{}", f != "context::prune"),
        ("messages null", _with(f, messages=None), True),
        ("messages missing", _with(f, messages=_DROP), True),
        ("messages a string", _with(f, messages="hello"), True),
        ("messages an object", _with(f, messages={"0": _msg_user()}), True),
        ("message a number", _with(f, messages=[1]), True),
        ("message null", _with(f, messages=[None]), True),
        ("message a list", _with(f, messages=[[]]), True),
        ("role missing", _with_message(f, {"content": [], "timestamp": 1}), True),
        ("role system", _with_message(f, {"role": "system", "content": [], "timestamp": 1}), True),
        ("role tool", _with_message(f, {"role": "tool", "content": "x", "timestamp": 1}), True),
        ("role empty", _with_message(f, {"role": "", "content": [], "timestamp": 1}), True),
        ("role a number", _with_message(f, {"role": 7, "content": [], "timestamp": 1}), True),
        ("content missing", _with_message(f, {"role": "user", "timestamp": 1}), True),
        ("content a string", _with_message(f, {"role": "user", "content": "hi", "timestamp": 1}), True),
        ("content null", _with_message(f, {"role": "user", "content": None, "timestamp": 1}), True),
        ("timestamp missing", _with_message(f, {"role": "user", "content": []}), True),
        ("timestamp a string", _with_message(f, {"role": "user", "content": [], "timestamp": "1"}), True),
        ("timestamp a float", _with_message(f, {"role": "user", "content": [], "timestamp": 1.5}), True),
        ("timestamp beyond i64", _with_message(f, {"role": "user", "content": [], "timestamp": 2**63}), True),
        ("timestamp beyond u64", _with_message(f, {"role": "user", "content": [], "timestamp": 2**64}), True),
        ("timestamp negative", _with_message(f, {"role": "user", "content": [], "timestamp": -5}), False),
        ("block type video", _with_block(f, {"type": "video", "url": "x"}), True),
        ("block type missing", _with_block(f, {"text": "x"}), True),
        ("block a string", _with_block(f, "text"), True),
        ("text block without text", _with_block(f, {"type": "text"}), True),
        ("text block text a number", _with_block(f, {"type": "text", "text": 5}), True),
        ("image without data", _with_block(f, {"type": "image", "mime": "image/png"}), True),
        ("image data a list", _with_block(f, {"type": "image", "mime": "image/png", "data": [1]}), True),
        ("file size negative", _with_block(f, {"type": "file", "attachment_id": "a", "name": "n", "mime": "m", "size": -1}), True),
        ("file size huge", _with_block(f, {"type": "file", "attachment_id": "a", "name": "n", "mime": "m", "size": U64_MAX}), False),
        ("inline result without content", _with_block(f, {"type": "function_result", "function_call_id": "c1"}), True),
        ("inline result is_error a string", _with_block(f, {"type": "function_result", "function_call_id": "c1", "content": [], "is_error": "no"}), True),
        ("function_call without id", _with_message(f, {"role": "assistant", "content": [{"type": "function_call", "function_id": "f"}], "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 5}), True),
        ("stop_reason unknown", _with_message(f, {"role": "assistant", "content": [], "stop_reason": "done", "model": "m", "provider": "p", "timestamp": 5}), True),
        *[(f"stop_reason {name}", _with_message(f, {"role": "assistant", "content": [], "stop_reason": value, "model": "m", "provider": "p", "timestamp": 5}), bad)
          for name, value, bad in _ENUM_FORMS],
        ("error_kind a number", _with_message(f, {"role": "assistant", "content": [], "stop_reason": "error", "error_kind": 5, "model": "m", "provider": "p", "timestamp": 5}), True),
        ("error_kind an object naming it", _with_message(f, {"role": "assistant", "content": [], "stop_reason": "error", "error_kind": {"transient": None}, "model": "m", "provider": "p", "timestamp": 5}), False),
        ("usage negative", _with_message(f, {"role": "assistant", "content": [], "stop_reason": "end", "usage": {"input": -1}, "model": "m", "provider": "p", "timestamp": 5}), True),
        ("result without function_id", _with_message(f, {"role": "function_result", "function_call_id": "c1", "content": [], "timestamp": 5}), True),
        ("result is_error null", _with_message(f, {"role": "function_result", "function_call_id": "c1", "function_id": "read", "content": [], "is_error": None, "timestamp": 5}), True),
        ("custom without custom_type", _with_message(f, {"role": "custom", "content": [], "timestamp": 5}), True),
        ("arguments nested 5000 deep", arguments_deep, True),
        *[(f"arguments nested {d} deep", arguments_deep.replace(deep, _deep(d)), False)
          for d in (200, 300, 600, 900)],
        ("details with huge float", _with_message(f, {"role": "function_result", "function_call_id": "c1", "function_id": "read", "content": [], "details": {"x": 1.7976931348623157e308}, "timestamp": 5}), False),
        ("duplicate messages key", b'{"messages": [], "messages": null, "model": {"id": "m"}}', True),
    ]
    if f == "context::prune":
        cases += [
            ("options a string", _with(f, options="fast"), True),
            ("option negative", _with(f, options={"protect_recent_tokens": -1}), True),
            ("option beyond u64", _with(f, options={"min_free_tokens": 2**64}), True),
            ("option a float", _with(f, options={"max_output_chars": 2.5}), True),
            ("option u64 max", _with(f, options={"protect_recent_tokens": U64_MAX, "min_free_tokens": U64_MAX, "max_output_chars": U64_MAX}), False),
            ("protected_functions numbers", _with(f, options={"protected_functions": [1]}), True),
            ("decay_user_turns negative", _with(f, options={"decay_user_turns": -1}), True),
            ("decay_user_turns a string", _with(f, options={"decay_user_turns": "2"}), True),
            ("protected_user_turns a float", _with(f, options={"protected_user_turns": 0.5}), True),
            ("protected_user_turns u64 max", _with(f, options={"protected_user_turns": U64_MAX, "decay_user_turns": U64_MAX}), False),
            ("explain a number", _with(f, options={"explain": 1}), True),
            ("model a string", _with(f, model="m"), True),
        ]
        return cases
    cases += [
        ("model missing", _with(f, model=_DROP), True),
        ("model null", _with(f, model=None), True),
        ("model a string", _with(f, model="gpt"), True),
        ("model id a number", _with(f, model={"id": 5}), True),
        ("limits empty", _with(f, model={"id": "m", "limits": {}}), True),
        ("context_window a string", _with(f, model={"id": "m", "limits": {"context_window": "4000", "max_output_tokens": 1}}), True),
        ("context_window negative", _with(f, model={"id": "m", "limits": {"context_window": -4000, "max_output_tokens": 1}}), True),
        ("context_window beyond u64", _with(f, model={"id": "m", "limits": {"context_window": 2**64, "max_output_tokens": 1}}), True),
        ("context_window u64 max", _with(f, model={"id": "m", "limits": {"context_window": U64_MAX, "max_output_tokens": U64_MAX}}), False),
        ("output larger than window", _with(f, model={"id": "m", "limits": {"context_window": 10, "max_output_tokens": 1000}}), f == "context::assemble"),
        ("input_limit zero", _with(f, model={"id": "m", "limits": {"context_window": 4000, "max_output_tokens": 1, "input_limit": 0}}), f in ("context::assemble",)),
        ("unknown model without limits", _with(f, model={"id": "no-such-model"}), False),
        ("options a list", _with(f, options=[1]), f != "context::count-tokens"),
        ("tail_turns negative", _with(f, options={"tail_turns": -1}), f != "context::count-tokens"),
        ("tail_turns beyond u64", _with(f, options={"tail_turns": 2**64}), f != "context::count-tokens"),
        ("lease_key a number", _with(f, options={"lease_key": 5}), f != "context::count-tokens"),
    ]
    if f in ("context::count-tokens", "context::assemble"):
        cases += [
            ("system_prompt a number", _with(f, system_prompt=5), True),
            ("tools a string", _with(f, tools="all"), True),
            ("tool without name", _with(f, tools=[{"description": "d"}]), True),
            ("tool execution_mode unknown", _with(f, tools=[{"name": "n", "description": "d", "execution_mode": "async"}]), True),
            ("tool execution_mode a number", _with(f, tools=[{"name": "n", "description": "d", "execution_mode": 5}]), True),
            ("tool execution_mode an object naming it", _with(f, tools=[{"name": "n", "description": "d", "execution_mode": {"parallel": None}}]), False),
            ("parts values numbers", _with(f, parts={"a": 1}), True),
            ("parts a list", _with(f, parts=["a"]), True),
        ]
    if f == "context::assemble":
        cases += [
            ("allow_compaction a number", _with(f, options={"allow_compaction": 0}), True),
            ("previous_summary a number", _with(f, options={"previous_summary": 5}), True),
            ("previous_summary 1 MB", _with(f, options={"previous_summary": "s" * (1 << 20)}), False),
            ("anchor_messages negative", _with(f, options={"anchor_messages": -1}), True),
            ("anchor_messages a float", _with(f, options={"anchor_messages": 1.0}), True),
            ("anchor_messages beyond u64", _with(f, options={"anchor_messages": 2**64}), True),
            ("anchor_messages u64 max", _with(f, options={"anchor_messages": U64_MAX}), False),
            ("explain a string", _with(f, options={"explain": "yes"}), True),
            ("explain null", _with(f, options={"explain": None}), False),
            ("allow_prune a string", _with(f, options={"allow_prune": "yes"}), True),
            ("preview_only a number", _with(f, options={"preview_only": 1}), True),
            ("thinking_level unknown", _with(f, options={"thinking_level": "ultra"}), True),
            ("thinking_level a number", _with(f, options={"thinking_level": 5}), True),
            ("thinking_level an object naming it", _with(f, options={"thinking_level": {"high": None}}), False),
            ("thinking_level an object holding an empty object", _with(f, options={"thinking_level": {"high": {}}}), True),
            ("reserved_tokens negative", _with(f, options={"reserved_tokens": -1}), True),
            ("reserved_tokens u64 max", _with(f, options={"reserved_tokens": U64_MAX}), True),
            ("request_overhead u64 max", _with(f, options={"request_overhead_tokens": U64_MAX}), True),
            ("max_result_tokens a float", _with(f, options={"max_result_tokens": 1.0}), True),
            ("protected_functions a string", _with(f, options={"protected_functions": "read"}), True),
        ]
    if f == "context::compact":
        cases += [
            ("preserve_recent_tokens negative", _with(f, options={"preserve_recent_tokens": -1}), True),
            ("instructions a number", _with(f, options={"instructions": 5}), True),
            ("previous_summary a list", _with(f, options={"previous_summary": ["a"]}), True),
        ]
    return cases


def _internal(function_id: str) -> list[tuple[str, bytes, bool]]:
    if function_id == "context-manager::ui-content":
        return [
            ("path missing", b"{}", True),
            ("path a number", b'{"path": 5}', True),
            ("path traversal", b'{"path": "../../etc/passwd"}', True),
            ("path unknown asset", b'{"path": "context-manager/nope.js"}', True),
            ("path 1 MB", _json({"path": "a" * (1 << 20)}), True),
        ]
    if function_id == "context::on-models-changed":
        return [
            ("provider a number", b'{"provider": 5}', True),
            ("a list", b'[1]', True),
            ("provider a 1 MB string", _json({"provider": "p" * (1 << 20)}), False),
        ]
    return [
        ("id a number", b'{"id": 5}', False),
        ("new_value a string", b'{"id": "context-manager", "new_value": "x"}', False),
    ]


# Malformed namespaces, on the context functions (options.namespace) and the policy functions.
_BAD_NAMESPACES: tuple[tuple[str, Any], ...] = (
    ("upper case", "Acme"), ("empty", ""), ("empty segment", "acme//x"), ("trailing slash", "acme/"),
    ("leading slash", "/acme"), ("a dot", "acme.io"), ("a space", "ac me"), ("segment of 65", "a" * 65),
    ("256 characters", "/".join(["a" * 63] * 4) + "/ab"), ("a number", 7), ("an object", {"a": 1}),
    ("a list", ["acme"]), ("true", True), ("non-ascii", "acmé"),
)


def _namespaces(function_id: str) -> list[tuple[str, bytes, bool]]:
    cases = []
    for name, value in _BAD_NAMESPACES:
        if function_id in PUBLIC:
            cases.append((f"namespace {name}", _with(function_id, options={"namespace": value}), True))
        else:
            cases.append((f"namespace {name}", _json({**_POLICY_BASE[function_id], "namespace": value}), True))
    return cases


_BUDGET = {"version": 3, "headroom": 0.1}
_POLICY_BASE: dict[str, dict[str, Any]] = {
    "context::policy::publish": {"surface": "budget", "document": _BUDGET},
    "context::policy::list": {"surface": "budget"},
    "context::policy::activate": {"id": "budget:acme:1"},
    "context::policy::withdraw": {"surface": "budget"},
    "context::policy::resolve": {},
    "context::policy::scopes": {},
}
# Malformed documents: every one refused with context/invalid_request, nothing stored.
_BAD_DOCUMENTS: tuple[tuple[str, str, Any], ...] = (
    ("budget null", "budget", None), ("budget a list", "budget", [1]), ("budget no version", "budget", {"headroom": 0.1}),
    ("budget version 2", "budget", {"version": 2, "headroom": 0.1}), ("budget version 3.0", "budget", {"version": 3.0, "headroom": 0.1}),
    ("budget version true", "budget", {"version": True, "headroom": 0.1}), ("budget no headroom", "budget", {"version": 3}),
    ("budget headroom 1", "budget", {**_BUDGET, "headroom": 1}), ("budget headroom -0.1", "budget", {**_BUDGET, "headroom": -0.1}),
    ("budget headroom a string", "budget", {**_BUDGET, "headroom": "0.1"}), ("budget headroom true", "budget", {**_BUDGET, "headroom": True}),
    ("budget headroom 1e400", "budget", {**_BUDGET, "headroom": 10**400}),
    ("budget history_mode keep", "budget", {**_BUDGET, "history_mode": "keep"}),
    ("budget history_mode null", "budget", {**_BUDGET, "history_mode": None}),
    ("budget eager off with at", "budget", {**_BUDGET, "eager_compaction": {"mode": "off", "at": 0.5}}),
    ("budget eager at_fill without at", "budget", {**_BUDGET, "eager_compaction": {"mode": "at_fill"}}),
    ("budget eager at 0", "budget", {**_BUDGET, "eager_compaction": {"mode": "at_fill", "at": 0}}),
    ("budget eager at 1.5", "budget", {**_BUDGET, "eager_compaction": {"mode": "at_fill", "at": 1.5}}),
    ("budget eager a string", "budget", {**_BUDGET, "eager_compaction": "off"}),
    ("budget eager unknown member", "budget", {**_BUDGET, "eager_compaction": {"mode": "off", "x": 1}}),
    ("budget max_history_tokens 31999", "budget", {**_BUDGET, "max_history_tokens": 31999}),
    ("budget max_history_tokens 2^31", "budget", {**_BUDGET, "max_history_tokens": 2**31}),
    ("budget max_history_tokens 32000.0", "budget", {**_BUDGET, "max_history_tokens": 32000.0}),
    ("budget unknown member", "budget", {**_BUDGET, "mode": "x"}),
    ("retention null", "retention", None), ("retention unknown member", "retention", {"unknown": 1}),
    ("retention verbatim_turns -1", "retention", {"verbatim_turns": -1}),
    ("retention bad glob", "retention", {"tools": {"rules": [{"function": "a[", "result": {"mode": "keep"}}]}}),
    ("settings a list", "settings", []), ("settings unknown key", "settings", {"tail_truns": 1}),
    ("settings structural key", "settings", {"lease_dir": "/tmp"}), ("settings retention", "settings", {"retention": None}),
    ("settings the token", "settings", {"policy_write_token": "x"}), ("settings tail_turns -1", "settings", {"tail_turns": -1}),
    ("settings profile other", "settings", {"profile": "other"}), ("settings reduce_to 0", "settings", {"reduce_to": 0}),
)


def _policy(function_id: str) -> list[tuple[str, bytes, bool]]:
    base = _POLICY_BASE[function_id]
    cases = _namespaces(function_id)
    cases += [("unknown member", _json({**base, "extra": 1}), True)]
    if "surface" in base:
        cases += [("surface missing", _json({k: v for k, v in base.items() if k != "surface"}), True)]
        cases += [(f"surface {name}", _json({**base, "surface": value}), True)
                  for name, value in (("tools", "tools"), ("a number", 1), ("null", None))]
        cases += [(f"model_id {name}", _json({**base, "model_id": value}), True)
                  for name, value in (("empty", ""), ("a number", 5), ("a list", ["m"]), ("1 MB", "m" * (1 << 20)))]
        cases += [("model_id on retention", _json({**base, "surface": "retention", "model_id": "m"}), True)]
    if function_id == "context::policy::publish":
        cases += [("document missing", _json({"surface": "budget"}), True)]
        cases += [(f"document {name}", _json({"surface": surface, "document": document}), True)
                  for name, surface, document in _BAD_DOCUMENTS]
    if function_id == "context::policy::activate":
        cases += [(f"id {name}", _json({"id": value}), True)
                  for name, value in (("missing", None), ("a number", 1), ("unknown", "budget:acme:9"),
                                      ("not an id", "x"), ("version 0", "budget::0"), ("huge version", "budget::" + "9" * 40))]
    return cases


# ---------------------------------------------------------------- huge and value-only cases

def _fifty_mb(function_id: str) -> Case:
    def body() -> bytes:
        text = "x" * MB50
        payload = base_payload(function_id) if function_id in PUBLIC else {"path": text}
        if function_id in PUBLIC:
            payload["messages"] = [*payload["messages"], _msg_user(text, 9)]
        return _json(payload)

    return Case("50 MB string", function_id, make_body=body,
                must_fail=function_id == "context-manager::ui-content")


def _nested_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _value_cases(function_id: str) -> list[Case]:
    """Decoded values a library caller can hand to ``call`` but no JSON text can carry."""
    if function_id not in PUBLIC:
        return []
    deep_args = base_payload(function_id)
    message = {"role": "assistant", "content": [{"type": "function_call", "id": "c", "function_id": "f",
                                                 "arguments": None}],
               "stop_reason": "end", "model": "m", "provider": "p", "timestamp": 7}

    def deep_arguments() -> Any:
        deep = {**message, "content": [{**message["content"][0], "arguments": _nested_value(5000)}]}
        return {**deep_args, "messages": [*deep_args["messages"], deep]}

    def tuple_messages() -> Any:
        return {**base_payload(function_id), "messages": tuple(_history())}

    def bytes_text() -> Any:
        return {**base_payload(function_id), "messages": [{"role": "user", "content": [{"type": "text", "text": b"hi"}], "timestamp": 1}]}

    def float_nan_details() -> Any:
        m = {"role": "function_result", "function_call_id": "c1", "function_id": "read", "content": [],
             "details": {"x": float("nan")}, "timestamp": 5}
        return {**base_payload(function_id), "messages": [*_history(), m]}

    def lone_surrogate_value() -> Any:
        return {**base_payload(function_id), "messages": [_msg_user("a\ud800b")]}

    def deep_value_top() -> Any:
        return _nested_value(5000)

    return [
        Case("value: arguments nested 5000 deep", function_id, value=deep_arguments),
        Case("value: top level nested 5000 deep", function_id, value=deep_value_top),
        Case("value: messages a tuple", function_id, value=tuple_messages),
        Case("value: text as bytes", function_id, value=bytes_text),
        Case("value: NaN in details", function_id, value=float_nan_details),
        Case("value: lone surrogate in text", function_id, value=lone_surrogate_value),
    ]


def cases() -> Iterator[Case]:
    """The whole corpus, in a fixed order."""
    for function_id in ALL_FUNCTIONS:
        for name, body in _raw_bodies():
            yield Case(name, function_id, body=body, must_fail=True)
        if function_id in POLICY:
            for name, body, must_fail in _policy(function_id):
                yield Case(name, function_id, body=body, must_fail=must_fail)
            continue
        extra = _structural(function_id) if function_id in PUBLIC else _internal(function_id)
        if function_id in PUBLIC:
            extra = [*extra, *_namespaces(function_id)]
        for name, body, must_fail in extra:
            yield Case(name, function_id, body=body, must_fail=must_fail)
        yield from _value_cases(function_id)
        yield _fifty_mb(function_id)


# ---------------------------------------------------------------- configuration values

# Wrong values by the kind of key (every one must be refused with a `json parse: ` error naming
# it). The whole-object cases come first.
_CONFIG_WHOLE: tuple[tuple[str, Any], ...] = (
    ("not an object", [1]),
    ("a string", "tail_turns: 3"),
    ("unknown key", {"tail_truns": 3}),
    ("a key that is not a name", {"": 1}),
)
_WRONG_COUNT = (-1, 1.5, 1.0, "1", None, True, 2**64, [], {})
_WRONG_BY_KIND: dict[str, tuple[Any, ...]] = {
    "count": _WRONG_COUNT,
    "positive count": (0, *_WRONG_COUNT),
    "boolean": ("yes", "true", 1, 0, None, [], {}),
    "string": (5, None, True, ["a"], {}),
    "string or null": (5, True, ["a"], {}, 1.5),
    "names": ("TodoWrite", 5, None, True, {}, [""], ["a", "a"], [5], [None]),
    "model or null": (5, "gpt-4o", True, [], {}, {"id": ""}, {"id": 5}, {"id": "m", "provider": 5},
                      {"id": "m", "extra": 1}),
    "positive count or null": (0, -1, 1.5, 1.0, "1", True, 2**64, [], {}),
    "choice": ("other", "", 5, None, True, ["a"], {"x": None}),
    "fraction": (0, 0.0, -0.5, 1.5, 2, "0.5", True, None, []),
    "fraction or null": (0, 0.0, -0.5, 1.0000001, 2, "0.5", True, []),
    "retention": (5, "none", True, [], {"unknown": 1}, {"verbatim_turns": -1}, {"verbatim_turns": 1.5},
                  {"tools": {"rules": [{"function": ""}]}}, {"tools": {"rules": [{"function": "a[", "result": {"mode": "keep"}}]}},
                  {"tools": {"default": {"result": {"mode": "over", "over": 5, "to": 9}}}},
                  {"tools": {"errors": {"mode": "sometimes"}}}, {"tools": {"mark_truncations": "no"}},
                  {"text": {"prompt": {"mode": "always"}}}, {"text": {"message": {"mode": "always", "to": 1, "keep": "middle"}}},
                  {"reasoning": {}}, {"reasoning": {"keep_turns": -1}},
                  {"media": {"rules": [{"mime": "png", "keep_turns": 1}]}}, {"media": {"default_keep_turns": "1"}}),
}
# Every configuration key and the kind of its values (the record's declaration order).
CONFIG_KEYS: dict[str, str] = {
    "reserved_tokens_cap": "count", "reserved_pct": "count", "tail_turns": "count",
    "protect_recent_tokens": "count", "decay_user_turns": "count", "protected_user_turns": "count",
    "min_free_tokens": "count", "max_output_chars": "count", "max_result_tokens": "count",
    "lease_ttl_secs": "count", "allow_fallback_limits": "boolean", "summarizer_timeout_ms": "count",
    "lease_dir": "string", "overflow_fallback": "choice", "estimator": "choice",
    "user_less_compaction": "boolean", "anchor_messages": "count", "summary_check": "choice",
    "summarizer_fallback": "choice", "working_set": "boolean", "report_prefix": "boolean", "reduce_to": "fraction",
    "summary_reuse": "boolean", "summary_placement": "choice", "eager_compaction_at": "fraction or null",
    "compact_ahead_at": "fraction or null", "retention": "retention", "count_calibration": "choice", "lease_store": "choice",
    "session_store": "choice", "session_ttl_secs": "positive count", "profile": "choice",
    "max_history_tokens": "positive count or null", "plan_functions": "names",
    "policy_write_token": "string or null", "summarizer_model": "model or null",
    "compaction_instructions": "string or null", "summarizer_request": "choice"
}


@dataclass(frozen=True)
class ConfigCase:
    name: str
    value: Any  # the whole configuration value

    @property
    def id(self) -> str:
        return f"config:{self.name}"


def config_cases() -> Iterator[ConfigCase]:
    """Every key given every wrong value of its kind, then the whole-object faults."""
    for key, kind in CONFIG_KEYS.items():
        for wrong in _WRONG_BY_KIND[kind]:
            yield ConfigCase(f"{key} = {json.dumps(wrong)}", {key: wrong})
    for name, value in _CONFIG_WHOLE:
        yield ConfigCase(name, value)


def run_config_in_process(case: ConfigCase) -> Outcome:
    """A library call with ``case.value`` as its configuration: a clean refusal is
    ``ConfigError`` (``json parse: <detail>``), before any function runs."""
    from context_manager import ConfigError, call

    try:
        call("context::count-tokens", {"model": {"id": "m"}, "messages": []}, config=case.value)
    except ConfigError as exc:
        return Outcome("error", exc.prefix, str(exc))
    except Exception as exc:  # what the corpus exists to catch
        return Outcome("crash", "", f"{type(exc).__name__}: {exc}")
    return Outcome("ok")


# A representative subset for the command line (one process per case).
CLI_SAMPLE = (
    "context::count-tokens:empty body",
    "context::count-tokens:invalid utf-8",
    "context::count-tokens:lone high surrogate escape",
    "context::count-tokens:nesting 5000 deep",
    "context::count-tokens:role system",
    "context::count-tokens:50 MB string",
    "context::prune:whitespace body",
    "context::prune:messages null",
    "context::prune:option negative",
    "context::prune:block type video",
    "context::prune:arguments nested 5000 deep",
    "context::assemble:top-level null",
    "context::assemble:model missing",
    "context::assemble:context_window beyond u64",
    "context::assemble:timestamp beyond i64",
    "context::assemble:thinking_level unknown",
    "context::assemble:number 1e400",
    "context::compact:truncated object",
    "context::compact:preserve_recent_tokens negative",
    "context-manager::ui-content:path traversal",
)


# Wrong configuration files for the command line (`call --config FILE`, one process each).
CONFIG_CLI_SAMPLE = (
    "config:retention = {\"tools\": {\"rules\": [{\"function\": \"\"}]}}",
    "config:count_calibration = 5",
    "config:reduce_to = 0",
    "config:session_ttl_secs = 0",
    "config:profile = 5",
    "config:unknown key",
)


# Cases left out of the committed corpus runs while a defect makes them crash. None today: the
# defects the corpus found are fixed and pinned in ``test_fixed_defects.py``.
KNOWN_BUG_CASES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok" | "error" | "crash"
    code: str = ""
    message: str = ""


def problem(case: Case, outcome: Outcome) -> str | None:
    """Why ``outcome`` is not acceptable for ``case``; ``None`` when it is."""
    if outcome.kind == "crash":
        return f"crashed: {outcome.message[:200]}"
    if outcome.kind == "ok":
        return "answered a malformed payload" if case.must_fail else None
    if outcome.code != "invocation_failed":
        return f"unexpected code {outcome.code!r}"
    if not outcome.message.startswith(allowed_prefixes(case.function_id)):
        return f"unexpected message {outcome.message[:200]!r}"
    if "Traceback" in outcome.message:
        return "traceback in the message"
    return None


def run_in_process(case: Case) -> Outcome:
    """The library entry: bytes are parsed as the command line and the engine client do."""
    from context_manager import CallError, call
    from context_manager.wire.codec import loads
    from context_manager.wire.errors import ContextManagerError

    try:
        payload = case.value() if case.value is not None else loads(case.raw() or b"")
        call(case.function_id, payload)
    except ContextManagerError as exc:
        return Outcome("error", exc.code, exc.wire_message)
    except CallError as exc:
        return Outcome("error", exc.code, exc.message)
    except Exception as exc:  # what the corpus exists to catch
        return Outcome("crash", "", f"{type(exc).__name__}: {exc}")
    return Outcome("ok")

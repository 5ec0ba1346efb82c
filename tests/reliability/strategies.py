"""Hypothesis generators for the reliability properties: wire histories, models, configurations
and options, kept small so that thousands of cases run in seconds.

Histories are well formed the way an agent loop writes them: every function call is answered
right after the assistant message that made it (as ``function_result`` messages or as inline
blocks of one user message, whose ``is_error`` may be left out or spelled out), timestamps are
unique and increasing, and custom messages, images, thinking blocks and usage are sprinkled
in. Free-form values and costs often hold numbers Python's `==` confuses (``0``, ``0.0``,
``-0.0``, ``1.0``, ``True``...), and ``twinned`` turns a message into its twin, equal in
Python but written differently in JSON. Result texts are long enough, relative to the small
thresholds the configurations draw, to make cap, prune, compaction and emergency reduction run.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Each property runs this many generated cases; the report script may lower it for a quick run.
EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "2000"))

RELIABILITY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # fixed cases: the CI run is reproducible and its time predictable
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

FUNCTION_IDS = ("read", "grep", "bash", "fs::w")
PNG = {"type": "image", "mime": "image/png", "data": "iVBORw0KGgo="}

# Short varied text (multibyte included) or a long run of one character.
_CHARS = "aé中😀 \n\"\\"
short_text = st.text(alphabet=st.sampled_from(list(_CHARS) + list("bcdxyz")), max_size=12)
long_text = st.builds(lambda c, n: c * n, st.sampled_from(list("x中é😀")), st.integers(0, 1800))
any_text = st.one_of(short_text, short_text, long_text)
# What people type and models answer: mostly short, now and then long.
prose = st.one_of(short_text, short_text, short_text, short_text, long_text)

# Numbers Python's `==` takes for one another while JSON writes them apart (see ``twinned``).
twin_numbers = st.sampled_from([0, 0.0, -0.0, 1, 1.0, -1.0, True, False, 2**53, 2.0**53])
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False), short_text, twin_numbers,
)
free_form = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(short_text, inner, max_size=3)),
    max_leaves=6,
)
costs = st.one_of(st.sampled_from([0.0, -0.0, 0, 1, 1.0, 2.0**53]),
                  st.floats(0.0, 50.0), st.integers(0, 10**6))


def twin(value: Any) -> Any:
    """A different JSON value that Python's `==` says is ``value``: the zero of the other sign,
    a boolean as its integer, an integer as its float, an integral float as its integer; any
    other value as it is. Containers are twinned leaf by leaf."""
    kind = type(value)
    if kind is dict:
        return {key: twin(item) for key, item in value.items()}
    if kind is list:
        return [twin(item) for item in value]
    if kind is bool:
        return int(value)
    if kind is int and abs(value) <= 2**53:
        return float(value)
    if kind is float and value == 0.0:
        return -value
    if kind is float and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def twinned(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with every free-form value and usage cost twinned (see ``twin``): equal to it
    in Python, another message in JSON."""
    out = dict(message)
    if "details" in out:
        out["details"] = twin(out["details"])
    if "usage" in out:
        out["usage"] = {name: twin(value) if name == "cost_usd" and type(value) is not bool else value
                        for name, value in out["usage"].items()}
    out["content"] = [{**b, "arguments": twin(b["arguments"])} if b["type"] == "function_call" and "arguments" in b
                      else b for b in out["content"]]
    return out



def rare(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n`` draws (a plain integer draw would hit its bound far more often)."""
    return st.sampled_from([False] * (n - 1) + [True])


# ---------------------------------------------------------------- messages (wire form)

def user(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: list[dict[str, Any]], stop: str = "end", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "stop_reason": stop, "model": "m", "provider": "p"}
    if usage is not None:
        message["usage"] = usage
    return message


@st.composite
def _usage(draw: st.DrawFn) -> dict[str, Any] | None:
    """Now and then the usage a provider reported, with a cost (zeros of both signs included)."""
    if not draw(rare(4)):
        return None
    return {"input": draw(st.integers(0, 10**6)), "output": draw(st.integers(0, 10**4)), "cost_usd": draw(costs)}


def custom(text: str) -> dict[str, Any]:
    return {"role": "custom", "custom_type": "ui.note", "content": [{"type": "text", "text": text}]}


@st.composite
def _user_turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(prose)}]
    if draw(rare(25)):
        blocks.append(dict(PNG))
    return [user(blocks)]


@st.composite
def _assistant_reply(draw: st.DrawFn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if draw(rare(6)):
        blocks.append({"type": "thinking", "text": draw(short_text)})
    blocks.append({"type": "text", "text": draw(prose)})
    return [assistant(blocks, usage=draw(_usage()))]


@st.composite
def _call_round(draw: st.DrawFn, next_call: list[int]) -> list[dict[str, Any]]:
    """An assistant message with 1-2 calls, answered at once (separately or inline)."""
    calls = []
    for _ in range(draw(st.integers(1, 2))):
        next_call[0] += 1
        calls.append({"type": "function_call", "id": f"c{next_call[0]}",
                      "function_id": draw(st.sampled_from(FUNCTION_IDS)),
                      "arguments": draw(st.one_of(st.just({}), free_form))})
    messages = [assistant(calls, "function_call", draw(_usage()))]

    def output() -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(any_text)}]
        if draw(rare(12)):
            blocks.append(dict(PNG))
        return blocks

    if draw(rare(4)):
        inline = []
        for c in calls:
            block: dict[str, Any] = {"type": "function_result", "function_call_id": c["id"], "content": output()}
            # An inline result's `is_error` is left out, spelled out as false, or true.
            flag = draw(st.sampled_from([None, None, False, True]))
            if flag is not None:
                block["is_error"] = flag
            inline.append(block)
        messages.append(user(inline))
    else:
        for c in calls:
            result: dict[str, Any] = {"role": "function_result", "function_call_id": c["id"],
                                      "function_id": c["function_id"], "content": output()}
            if draw(rare(8)):
                result["details"] = draw(free_form)
            if draw(rare(3)):  # spelled out as decoding fills it in (or true)
                result["is_error"] = draw(st.booleans())
            messages.append(result)
    return messages


@st.composite
def histories(draw: st.DrawFn, *, customs: bool = True, images: bool = True,
              max_rounds: int = 10) -> list[dict[str, Any]]:
    """A wire history with timestamps 1000, 1001, ... in list order."""
    next_call = [0]
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, max_rounds))):
        kind = draw(st.integers(0, 9))
        if kind <= 2:
            part = draw(_user_turn())
        elif kind <= 4:
            part = draw(_assistant_reply())
        elif kind <= 8:
            part = draw(_call_round(next_call))
        else:
            part = [custom(draw(short_text))] if customs else draw(_assistant_reply())
        messages.extend(part)
    if not images:
        messages = [_without_images(m) for m in messages]
    return [{**m, "timestamp": 1000 + i} for i, m in enumerate(messages)]


@st.composite
def sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Agent sessions of many user turns (what compaction works on): each turn a request, some
    call rounds and an answer; inline results, customs and images now and then."""
    next_call = [0]
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(3, 12))):
        messages.extend(draw(_user_turn()))
        for _ in range(draw(st.integers(0, 2))):
            messages.extend(draw(_call_round(next_call)))
        if draw(rare(6)):
            messages.append(custom(draw(short_text)))
        messages.extend(draw(_assistant_reply()))
    return [{**m, "timestamp": 1000 + i} for i, m in enumerate(messages)]


@st.composite
def agent_runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One task worked through many call rounds (what a pinned anchor is for): the request,
    sometimes a first round answered before the agent's first word, then 6 to 30 rounds with
    now and then a user remark, a custom message or an assistant reply."""
    next_call = [0]
    messages: list[dict[str, Any]] = list(draw(_user_turn()))
    if draw(rare(3)):
        messages.extend(draw(_call_round(next_call)))
    for _ in range(draw(st.integers(6, 30))):
        messages.extend(draw(_call_round(next_call)))
        if draw(rare(8)):
            messages.extend(draw(_user_turn()))
        if draw(rare(8)):
            messages.append(custom(draw(short_text)))
        if draw(rare(6)):
            messages.extend(draw(_assistant_reply()))
    return [{**m, "timestamp": 1000 + i} for i, m in enumerate(messages)]


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    def blocks(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for b in content:
            if b["type"] == "image":
                continue
            if b["type"] == "function_result":
                b = {**b, "content": blocks(b["content"])}
            out.append(b)
        return out

    return {**message, "content": blocks(message["content"])}


# ---------------------------------------------------------------- models, configs, options

@st.composite
def models(draw: st.DrawFn) -> dict[str, Any]:
    # Windows from "nothing fits" to "everything fits", most of them in between.
    window = draw(st.one_of(st.integers(300, 2000), st.integers(2000, 9000),
                            st.integers(9000, 40000)))
    limits: dict[str, Any] = {"context_window": window,
                              "max_output_tokens": draw(st.integers(0, window // 3))}
    if draw(rare(7)):
        limits["input_limit"] = draw(st.integers(window // 4, window))
    model: dict[str, Any] = {"id": draw(st.sampled_from(["m", "claude-x", "gpt-4o", "o3-mini"])),
                             "limits": limits}
    if draw(st.booleans()):
        model["provider"] = "p"
    return model


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """Configuration values with thresholds scaled to the small generated histories."""
    return {
        "reserved_tokens_cap": draw(st.integers(0, 2000)),
        "reserved_pct": draw(st.integers(0, 30)),
        "tail_turns": draw(st.integers(0, 4)),
        "protect_recent_tokens": draw(st.integers(0, 1500)),
        "decay_user_turns": draw(st.integers(0, 3)),
        "protected_user_turns": draw(st.integers(0, 3)),
        "min_free_tokens": draw(st.integers(0, 600)),
        "max_output_chars": draw(st.integers(0, 1500)),
        "max_result_tokens": draw(st.integers(0, 800)),
        "estimator": draw(st.sampled_from(["heuristic", "heuristic", "heuristic", "auto"])),
    }


@st.composite
def assemble_options(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(rare(5)):
        return None
    options: dict[str, Any] = {}
    for name, strategy in (
        ("reserved_tokens", st.integers(0, 2000)),
        ("tail_turns", st.integers(0, 4)),
        ("allow_prune", st.booleans()),
        ("allow_compaction", st.booleans()),
        ("protected_functions", st.lists(st.sampled_from(FUNCTION_IDS), max_size=2)),
        ("max_result_tokens", st.integers(0, 800)),
        ("request_overhead_tokens", st.integers(0, 300)),
        ("thinking_level", st.sampled_from(["minimal", "low", "medium", "high", "xhigh"])),
        ("previous_summary", short_text),
    ):
        if draw(rare(3)):
            options[name] = draw(st.one_of(st.none(), strategy))
    return options


@st.composite
def prune_options(draw: st.DrawFn, *, min_output_chars: int = 0) -> dict[str, Any]:
    return {
        "protect_recent_tokens": draw(st.integers(0, 1500)),
        "decay_user_turns": draw(st.integers(0, 3)),
        "protected_user_turns": draw(st.integers(0, 3)),
        "min_free_tokens": draw(st.integers(0, 600)),
        "max_output_chars": draw(st.integers(min_output_chars, 1500)),
        "protected_functions": draw(st.lists(st.sampled_from(FUNCTION_IDS), max_size=2)),
    }


tools = st.one_of(
    st.none(),
    st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from(["agent_trigger", "submit_result", "read"]),
         "description": short_text},
        optional={"parameters": free_form, "label": st.one_of(st.none(), short_text)},
    ), max_size=3),
)
system_prompts = st.one_of(st.none(), short_text, long_text)


# ---------------------------------------------------------------- opt-in keys that keep state or rewrite history

# Retention policies from none to one that cuts everything it can (thresholds in tokens, scaled
# to the generated texts).
RETENTION_POLICIES: tuple[dict[str, Any] | None, ...] = (
    None,
    {"verbatim_turns": 1,
     "tools": {"rules": [{"function": "read", "result": {"mode": "over", "over": 200, "to": 50, "keep": "both"}}],
               "errors": {"mode": "keep"}},
     "reasoning": {"keep_turns": 1}},
    {"verbatim_turns": 0,
     "tools": {"default": {"arguments": {"mode": "always", "to": 10, "keep": "head"},
                           "result": {"mode": "over", "over": 100, "to": 20, "keep": "tail"}},
               "mark_truncations": False},
     "text": {"prompt": {"mode": "over", "over": 300, "to": 100, "keep": "both"},
              "message": {"mode": "over", "over": 200, "to": 60, "keep": "head"}},
     "reasoning": {"keep_turns": 0},
     "media": {"default_keep_turns": 0, "rules": [{"mime": "image/*", "keep_turns": 1}]}},
)


@st.composite
def opt_in_configs(draw: st.DrawFn) -> dict[str, Any]:
    """``configs()`` plus the opt-in keys that keep per-session state (summary reuse, the
    calibration ledger, the stores) or rewrite history (anchor, retention, the fallbacks,
    summary placement, cache-aware and eager reduction), each drawn on or off."""
    config = draw(configs())
    config.update({
        "anchor_messages": draw(st.sampled_from([0, 0, 1, 2])),
        "retention": draw(st.sampled_from(RETENTION_POLICIES)),
        "summary_reuse": draw(st.booleans()),
        "count_calibration": draw(st.sampled_from(["off", "usage"])),
        "summary_check": draw(st.sampled_from(["off", "append"])),
        "summarizer_fallback": draw(st.sampled_from(["none", "extractive"])),
        "overflow_fallback": draw(st.sampled_from(["error", "drop_oldest"])),
        "summary_placement": draw(st.sampled_from(["system_prompt", "message"])),
        "reduce_to": draw(st.sampled_from([1.0, 1.0, 0.7])),
        "eager_compaction_at": draw(st.sampled_from([None, None, 0.8])),
        "lease_store": draw(st.sampled_from(["file", "state"])),
        "session_store": draw(st.sampled_from(["memory", "state"])),
    })
    return config

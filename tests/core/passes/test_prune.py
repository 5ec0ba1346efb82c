"""Normal pruning (spec 02 §5, examples 11.1-11.8 and 11.19)."""

from __future__ import annotations

import copy
import dataclasses

import anyio
import pytest
from shorthand import C, M, R, U, sizes

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.passes.cap import cap_results
from context_manager.core.passes.prune import PruneParams, is_canonical_placeholder, placeholder, prune
from context_manager.core.settings import WorkerConfig
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.prune import handle
from context_manager.wire import codec
from context_manager.wire.errors import DecodeError, HandlerError

E = HEURISTIC
P0 = PruneParams(protect_recent_tokens=100, decay_user_turns=0, protected_user_turns=2,
                 min_free_tokens=1, max_output_chars=100, protected_functions=())
DEFAULTS = PruneParams()


def test_default_params_are_the_configuration_defaults():
    config = WorkerConfig()
    assert DEFAULTS == PruneParams(
        protect_recent_tokens=config.protect_recent_tokens,
        decay_user_turns=config.decay_user_turns,
        protected_user_turns=config.protected_user_turns,
        min_free_tokens=config.min_free_tokens,
        max_output_chars=config.max_output_chars,
        protected_functions=(),
    )
    assert (DEFAULTS.protect_recent_tokens, DEFAULTS.decay_user_turns, DEFAULTS.protected_user_turns,
            DEFAULTS.min_free_tokens, DEFAULTS.max_output_chars) == (40000, 0, 2, 20000, 2000)


def stats(result):
    s = result.stats
    return (s.pruned_tokens, s.pruned_parts, s.scanned_parts)


def text_at(messages, index):
    return messages[index]["content"][0]["text"]


def test_placeholder_text_and_length():
    text = placeholder("shell::run", 2000)
    assert text == "[output of shell::run pruned: was ~2000 tokens; re-call it if still needed]"
    assert len(text) == 61 + len("shell::run") + 4 == 75
    assert E.text(text) == 18


def test_example_11_1_basic_prune_recent_turns_and_idempotence():
    history = [U("first", 1), R("c2", "shell::run", "x" * 8000, 2), U("second", 3),
               R("c4", "shell::run", "x" * 8000, 4), U("third", 5)]
    before = copy.deepcopy(history)
    result = prune(history, P0, E)
    assert stats(result) == (1982, 1, 1)
    assert result.messages[1]["content"] == [{"type": "text", "text": placeholder("shell::run", 2000)}]
    assert text_at(result.messages, 3) == "x" * 8000
    assert history == before
    assert stats(prune(result.messages, P0, E)) == (0, 0, 1)


def history_11_2():
    from shorthand import A

    return [U("task", 1), C("c1", "shell::run", 2), R("c1", "shell::run", "x" * 20000, 3),
            A("ok", 4), U("next", 5), U("done", 6)]


def test_example_11_2_sizes():
    assert sizes(history_11_2()) == [17, 45, 5040, 30, 17, 17]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, (0, 0, 1)),
        ({"protect_recent_tokens": 0}, (0, 0, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1}, (4982, 1, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 4982}, (4982, 1, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 4983}, (0, 0, 1)),
        ({"protect_recent_tokens": 4999, "min_free_tokens": 1}, (4982, 1, 1)),
        ({"protect_recent_tokens": 5000, "min_free_tokens": 1}, (0, 0, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "protected_user_turns": 3}, (0, 0, 0)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "protected_functions": ("shell::run",)},
         (0, 0, 0)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 20000}, (0, 0, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 19999},
         (4982, 1, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 20000,
          "decay_user_turns": 2}, (4982, 1, 1)),
        ({"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 20000,
          "decay_user_turns": 3}, (0, 0, 1)),
    ],
    ids=["a", "b", "c", "d-4982", "d-4983", "e-4999", "e-5000", "f", "g", "h-20000", "h-19999",
         "i", "j"],
)
def test_example_11_2_configuration_table(overrides, expected):
    params = dataclasses.replace(DEFAULTS, **overrides)
    result = prune(history_11_2(), params, E)
    assert stats(result) == expected
    if expected[1]:
        assert text_at(result.messages, 2) == placeholder("shell::run", 5000)
    else:
        assert result.messages == history_11_2()


def history_11_3():
    return [U("u1", 1), R("c2", "a::x", "x" * 400, 2), U("u2", 3), R("c4", "b::x", "x" * 400, 4),
            U("u3", 5), R("c6", "c::x", "x" * 400, 6), U("u4", 7)]


GRID_11_3 = {
    (0, 0): (0, 0, 3), (0, 1): (249, 3, 3), (0, 2): (166, 2, 3), (0, 3): (83, 1, 3),
    (1, 0): (0, 0, 3), (1, 1): (249, 3, 3), (1, 2): (166, 2, 3), (1, 3): (83, 1, 3),
    (2, 0): (0, 0, 2), (2, 1): (166, 2, 2), (2, 2): (166, 2, 2), (2, 3): (83, 1, 2),
    (3, 0): (0, 0, 1), (3, 1): (83, 1, 1), (3, 2): (83, 1, 1), (3, 3): (83, 1, 1),
    (4, 0): (0, 0, 0), (4, 1): (0, 0, 0), (4, 2): (0, 0, 0), (4, 3): (0, 0, 0),
}
PRUNED_11_3 = {249: "abc", 166: "ab", 83: "a", 0: ""}


@pytest.mark.parametrize(("protected", "decay"), sorted(GRID_11_3))
def test_example_11_3_decay_and_protected_turns_grid(protected, decay):
    params = PruneParams(protect_recent_tokens=0, max_output_chars=2000, min_free_tokens=1,
                         protected_user_turns=protected, decay_user_turns=decay)
    result = prune(history_11_3(), params, E)
    assert stats(result) == GRID_11_3[(protected, decay)]
    pruned = "".join(
        name for name, index in (("a", 1), ("b", 3), ("c", 5))
        if text_at(result.messages, index).startswith("[output of")
    )
    assert pruned == PRUNED_11_3[GRID_11_3[(protected, decay)][0]]


def test_example_11_3_window_keeps_the_newest_output():
    params = PruneParams(protect_recent_tokens=150, max_output_chars=2000, min_free_tokens=1,
                         protected_user_turns=0, decay_user_turns=1)
    result = prune(history_11_3(), params, E)
    assert stats(result) == (166, 2, 3)
    assert text_at(result.messages, 5) == "x" * 400
    assert text_at(result.messages, 1) == "[output of a::x pruned: was ~100 tokens; re-call it if still needed]"


def test_example_11_4_window_is_filled_newest_first():
    history = [U("a", 1), R("c2", "f", "x" * 4000, 2), R("c3", "f", "x" * 4000, 3), U("b", 4), U("c", 5)]
    result = prune(history, dataclasses.replace(P0, protect_recent_tokens=1000), E)
    assert stats(result) == (984, 1, 2)
    assert text_at(result.messages, 1) == "[output of f pruned: was ~1000 tokens; re-call it if still needed]"
    assert text_at(result.messages, 2) == "x" * 4000


def test_example_11_4_decay_variant():
    history = [U("first", 1), R("c2", "older", "x" * 400, 2), R("c3", "newer", "x" * 400, 3),
               U("second", 4), U("third", 5)]
    params = PruneParams(protect_recent_tokens=100, max_output_chars=10000, decay_user_turns=2,
                         protected_user_turns=0, min_free_tokens=1)
    result = prune(history, params, E)
    assert stats(result) == (83, 1, 2)
    assert text_at(result.messages, 2) == "x" * 400
    assert text_at(result.messages, 1) == placeholder("older", 100)


@pytest.mark.parametrize(
    ("min_free", "expected"),
    [(1, (2966, 2, 2)), (2965, (2966, 2, 2)), (2966, (2966, 2, 2)), (2967, (0, 0, 2)),
     (100000, (0, 0, 2))],
)
def test_example_11_5_min_free_tokens_is_all_or_nothing(min_free, expected):
    history = [U("u1", 1), R("c2", "big::a", "x" * 8000, 2), R("c3", "mid::b", "x" * 4000, 3),
               U("u2", 4), U("u3", 5)]
    params = PruneParams(protect_recent_tokens=0, protected_user_turns=2, max_output_chars=100,
                         min_free_tokens=min_free)
    result = prune(history, params, E)
    assert stats(result) == expected
    if not expected[1]:
        assert result.messages == history


CANON = "[output of shell::run pruned: was ~1000 tokens; re-call it if still needed]"
DECAY_ON = PruneParams(protect_recent_tokens=0, max_output_chars=10000, decay_user_turns=1,
                       protected_user_turns=0, min_free_tokens=0)


@pytest.mark.parametrize(
    ("text", "expected", "new_text"),
    [
        (CANON, (0, 0, 1), None),
        (CANON + " extra", (2, 1, 1), placeholder("shell::run", 20)),
        (CANON.replace("~1000", "~01000"), (1, 1, 1), placeholder("shell::run", 19)),
        (CANON.replace("~1000", "~+1000"), (1, 1, 1), placeholder("shell::run", 19)),
        ("[output of fs::read pruned: was ~1000 tokens; re-call it if still needed]", (0, 0, 1), None),
    ],
    ids=["canonical", "extra", "leading-zero", "plus", "other-id"],
)
def test_example_11_6_already_pruned_detection(text, expected, new_text):
    history = [U("u1", 1), R("c1", "shell::run", text, 2), U("u2", 3)]
    result = prune(history, DECAY_ON, E)
    assert stats(result) == expected
    assert text_at(result.messages, 1) == (new_text or text)


def test_example_11_6_decay_disabled_reprunes_a_placeholder():
    history = [U("u1", 1), R("c1", "shell::run", CANON, 2), U("u2", 3)]
    params = PruneParams(protect_recent_tokens=0, max_output_chars=0, decay_user_turns=0,
                         protected_user_turns=0, min_free_tokens=0)
    result = prune(history, params, E)
    assert stats(result) == (0, 1, 1)
    assert text_at(result.messages, 1) == placeholder("shell::run", 18)


def test_placeholder_detection_rejects_non_canonical_forms():
    def content(text):
        return [{"type": "text", "text": text}]

    assert is_canonical_placeholder(content(placeholder("f", 0)), "f")
    assert is_canonical_placeholder(content(placeholder("f", 2**64 - 1)), "f")
    assert not is_canonical_placeholder(content(placeholder("f", 2**64)), "f")
    assert not is_canonical_placeholder(content("[output of f pruned: was ~ tokens; re-call it if still needed]"), "f")
    assert not is_canonical_placeholder(content(placeholder("f", 5)) + content("x"), "f")
    assert not is_canonical_placeholder([{"type": "thinking", "text": placeholder("f", 5)}], "f")
    assert not is_canonical_placeholder(content(placeholder("f", 5)), "g")


@pytest.mark.parametrize(
    ("n", "before", "after", "expected"),
    [
        (1, 40, 58, (0, 0, 1)),
        (60, 55, 58, (0, 0, 1)),
        (72, 58, 58, (0, 0, 1)),
        (75, 59, 58, (0, 1, 1)),
        (76, 59, 58, (1, 1, 1)),
        (100, 65, 58, (7, 1, 1)),
    ],
)
def test_example_11_7_age_only_guard_boundaries(n, before, after, expected):
    history = [U("first", 1), R("c2", "shell::run", "x" * n, 2), U("second", 3)]
    result = prune(history, DECAY_ON, E)
    tokens = n // 4
    replaced = R("c2", "shell::run", placeholder("shell::run", tokens), 2)
    assert (sizes(history)[1], sizes([replaced])[0]) == (before, after)
    assert stats(result) == expected


def test_example_11_7_escape_heavy_function_id():
    fid = "\\" * 500
    history = [R("c1", fid, "x" * 700, 1), U("one", 2), U("two", 3), U("three", 4), U("four", 5)]
    params = PruneParams(protect_recent_tokens=0, max_output_chars=2000, decay_user_turns=4,
                         protected_user_turns=2, min_free_tokens=1)
    assert stats(prune(history, params, E)) == (0, 0, 1)


def wrapper_with(call_id: str, text: str, ts: int) -> dict:
    return M({"role": "user", "timestamp": ts, "content": [
        {"type": "function_result", "function_call_id": call_id,
         "content": [{"type": "text", "text": text}]}]})


def history_11_8(call_id: str = "c1"):
    from shorthand import A

    return [U("task", 1), C("c1", "shell::run", 2), wrapper_with(call_id, "x" * 8000, 3),
            A("used", 4), U("next", 5), U("done", 6), C("c1", "later::call", 7)]


def test_example_11_8_inline_results_resolve_to_the_preceding_call():
    result = prune(history_11_8(), P0, E)
    assert stats(result) == (1982, 1, 1)
    block = result.messages[2]["content"][0]
    assert block == {"type": "function_result", "function_call_id": "c1",
                     "content": [{"type": "text", "text": placeholder("shell::run", 2000)}]}


def test_example_11_8_protected_and_unresolved_inline_results():
    protected = dataclasses.replace(P0, protected_functions=("shell::run",))
    assert stats(prune(history_11_8(), protected, E)) == (0, 0, 0)
    unresolved = prune(history_11_8("nope"), P0, E)
    assert stats(unresolved) == (0, 0, 0)
    assert unresolved.messages == history_11_8("nope")


def _wrapper_age_history():
    return [C("c1", "shell::run", 1),
            M({"role": "user", "timestamp": 2, "content": [
                {"type": "text", "text": "before"},
                {"type": "function_result", "function_call_id": "c1",
                 "content": [{"type": "text", "text": "x" * 400}], "is_error": True},
                {"type": "text", "text": "after"}]}),
            U("next", 3), U("again", 4)]


@pytest.mark.parametrize(("decay", "pruned"), [(3, False), (2, True)])
def test_example_11_8_wrapper_age(decay, pruned):
    params = PruneParams(protect_recent_tokens=0, max_output_chars=10000, protected_user_turns=0,
                         min_free_tokens=1, decay_user_turns=decay)
    result = prune(_wrapper_age_history(), params, E)
    content = result.messages[1]["content"]
    assert content[0] == {"type": "text", "text": "before"}
    assert content[2] == {"type": "text", "text": "after"}
    assert content[1]["is_error"] is True
    expected = placeholder("shell::run", 100) if pruned else "x" * 400
    assert content[1]["content"] == [{"type": "text", "text": expected}]
    assert result.stats.pruned_parts == (1 if pruned else 0)


def test_custom_messages_are_not_turns_and_their_inline_results_are_eligible():
    custom = M({"role": "custom", "custom_type": "note", "timestamp": 3, "content": [
        {"type": "function_result", "function_call_id": "c1",
         "content": [{"type": "text", "text": "x" * 8000}]}]})
    history = [U("task", 1), C("c1", "shell::run", 2), custom, U("next", 4), U("done", 5)]
    result = prune(history, P0, E)
    assert stats(result) == (1982, 1, 1)
    assert result.messages[2]["custom_type"] == "note"


def test_memo_is_kept_exact_for_rewritten_hosts():
    history = history_11_2()
    memo = sizes(history)
    result = prune(history, dataclasses.replace(DEFAULTS, protect_recent_tokens=0, min_free_tokens=1),
                   E, memo)
    assert result.sizes == sizes(result.messages) == [17, 45, 59, 30, 17, 17]
    assert memo == [17, 45, 5040, 30, 17, 17]


def _replay(mid: int, decay: int) -> list[int]:
    raw: list[dict] = []
    ts = 0

    def nxt() -> int:
        nonlocal ts
        ts += 1
        return ts

    def add_result(function_id: str, length: int) -> None:
        t = nxt()
        raw.append(R(f"c{t}", function_id, "x" * length, t))

    params = dataclasses.replace(DEFAULTS, decay_user_turns=decay)
    totals = []
    for turn in range(20):
        raw.append(U(f"request {turn}", nxt()))
        for _ in range(3):
            add_result("engine::functions::info", mid)
        if turn == 5:
            add_result("engine::traces::list", 340000)
        if turn == 12:
            add_result("state::get", 300000)
        working = list(raw)
        capped = cap_results(working, sizes(working), 20000, E)
        pruned = prune(capped.messages, params, E, capped.sizes)
        assert pruned.sizes == sizes(pruned.messages)
        totals.append(sum(pruned.sizes))
    return totals


SERIES_10000 = [7648, 15296, 22947, 30598, 38249, 63943, 71594, 54465, 54682, 54899, 39615, 47266,
                72958, 75653, 56046, 56263, 56480, 41193, 48844, 56495]
SERIES_2400 = [1948, 3896, 5847, 7798, 9749, 29743, 31694, 33645, 35596, 37547, 39498, 41449, 61441,
               63392, 36948, 38899, 40850, 42801, 44752, 46703]


@pytest.mark.parametrize("decay", [0, 4])
def test_example_11_19_replay_mid_10000(decay):
    totals = _replay(10000, decay)
    assert totals == SERIES_10000
    assert max(totals) == 75653 and totals.index(75653) == 13


@pytest.mark.parametrize("decay", [0, 4])
def test_example_11_19_replay_mid_2400(decay):
    totals = _replay(2400, decay)
    assert totals == SERIES_2400
    assert max(totals) == 63392
    assert round(sum(totals[5:]) / 15, 2) == 41663.87


def _synthetic_decay_history():
    history: list[dict] = []
    ts = 0
    for turn in range(10):
        ts += 1
        history.append(U(f"turn {turn}", ts))
        ts += 1
        history.append(R(f"c{ts}", "medium::lookup", "x" * 2400, ts))
        if turn == 0:
            ts += 1
            history.append(R(f"c{ts}", "keep::me", "x" * 2400, ts))
    return history


@pytest.mark.parametrize(("decay", "expected", "total"), [(0, (0, 0, 8), 7229), (4, (3486, 6, 8), 3745)])
def test_example_11_19_synthetic_decay_check(decay, expected, total):
    history = _synthetic_decay_history()
    params = PruneParams(protect_recent_tokens=600, max_output_chars=10000, protected_user_turns=2,
                         min_free_tokens=1, protected_functions=("keep::me",), decay_user_turns=decay)
    result = prune(history, params, E, sizes(history))
    assert stats(result) == expected
    assert sum(result.sizes) == total
    assert text_at(result.messages, 2) == "x" * 2400  # keep::me
    assert text_at(result.messages, len(history) - 1) == "x" * 2400  # the last result
    if decay:
        pruned_turns = [i for i, m in enumerate(result.messages)
                        if m["role"] == "function_result" and text_at(result.messages, i).startswith("[output")]
        assert pruned_turns == [1, 4, 6, 8, 10, 12]  # the results of turns 0-5


def test_prune_is_idempotent_under_the_documented_thresholds():
    history = history_11_2()
    params = dataclasses.replace(DEFAULTS, protect_recent_tokens=0, min_free_tokens=1)
    once = prune(history, params, E)
    twice = prune(once.messages, dataclasses.replace(params, min_free_tokens=0), E)
    assert twice.stats.pruned_tokens == 0 and twice.messages == once.messages


# --- the context::prune function -------------------------------------------------------------

def call_prune(payload, config: WorkerConfig = WorkerConfig()):
    return anyio.run(handle, payload, HandlerContext(config=config))


def wire(messages):
    return [codec.loads(codec.dumps(m)) for m in messages]


def test_handler_options_override_config_and_null_falls_back():
    payload = {"messages": wire(history_11_2()),
               "options": {"protect_recent_tokens": 0, "min_free_tokens": 1}}
    response = call_prune(payload)
    assert (response["pruned_tokens"], response["pruned_parts"], response["scanned_parts"]) == (4982, 1, 1)
    assert list(response) == ["messages", "pruned_tokens", "pruned_parts", "scanned_parts"]
    from_config = call_prune({"messages": wire(history_11_2()),
                              "options": {"protect_recent_tokens": None, "min_free_tokens": None}},
                             WorkerConfig(protect_recent_tokens=0, min_free_tokens=1))
    assert from_config == response
    assert call_prune({"messages": wire(history_11_2()), "options": None}) == call_prune(
        {"messages": wire(history_11_2())})


def test_handler_zero_options_are_real_values():
    history = wire(history_11_3())
    response = call_prune({"messages": history, "options": {
        "protect_recent_tokens": 0, "max_output_chars": 2000, "min_free_tokens": 1,
        "protected_user_turns": 0, "decay_user_turns": 1}},
        WorkerConfig(protected_user_turns=4, decay_user_turns=0))
    assert (response["pruned_tokens"], response["pruned_parts"], response["scanned_parts"]) == (249, 3, 3)


def test_handler_keeps_custom_messages_and_normalises_returned_messages():
    raw = [{"role": "user", "content": [{"type": "text", "text": "a", "extra": 1}], "timestamp": 1},
           {"role": "custom", "custom_type": "c", "content": [], "details": None, "timestamp": 2},
           {"role": "function_result", "function_call_id": "c", "function_id": "f",
            "content": [], "timestamp": 3}]
    response = call_prune({"messages": raw, "model": {"id": "m", "limits": None}})
    assert response["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}], "timestamp": 1},
        {"role": "custom", "custom_type": "c", "content": [], "timestamp": 2},
        {"role": "function_result", "function_call_id": "c", "function_id": "f", "content": [],
         "details": None, "is_error": False, "timestamp": 3}]
    assert codec.dumps_wire(response).startswith(b'{"messages":[')
    assert codec.dumps_wire(response).endswith(b'"pruned_parts":0,"pruned_tokens":0,"scanned_parts":0}')


def test_handler_requires_messages_but_not_a_model():
    with pytest.raises(HandlerError) as failure:
        call_prune({})
    assert failure.value.wire_message == "handler error: context/invalid_request: messages is required"
    assert call_prune({"messages": [], "model": None})["messages"] == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"decay_user_turns": -1}, "invalid value: integer `-1`, expected usize"),
        ({"min_free_tokens": 1.5}, "invalid type: floating point `1.5`, expected u64"),
        ({"protected_functions": "shell::run"}, 'invalid type: string "shell::run", expected a sequence'),
        ({"max_output_chars": True, "decay_user_turns": "x"},
         'invalid type: string "x", expected usize'),
    ],
)
def test_handler_decoding_failures(options, message):
    with pytest.raises(DecodeError) as failure:
        call_prune({"messages": [], "options": options})
    assert str(failure.value.wire_message) == f"serialization error: {message}"

"""``options.preview_only`` on ``context::assemble``: the answer of the same request with
``allow_compaction: false``, and nothing left behind (no summariser call, no lease, nothing
remembered in the session store or the calibration ledger) — ``core.preview``."""

from __future__ import annotations

import asyncio
import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from compaction_support import FakeSummarizer, MemoryLeaseStore

from context_manager import CallError, call
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.state_session_store import StateSessionStore
from context_manager.api import build_context
from context_manager.config.parse import parse_config_value
from context_manager.core.assemble import AssembleDeps
from context_manager.core.counting.calibration import SentLedger
from context_manager.core.preview import KEPT, WITHHELD, ReadOnlyDeps
from context_manager.handlers.assemble import decode_options, handle
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ManualClock, RememberedCompaction
from context_manager.wire.codec import dumps_wire
from context_manager.wire.errors import ContextManagerError, error_envelope
from tests.adapters.test_state_stores import EngineState
from tests.core.compaction.test_inline_compaction import EXAMPLE_10, OVERFLOW, SMALL

# Every configuration key that keeps state between calls of one process (the stores are given
# to each context below).
STATEFUL = {"summary_reuse": True, "count_calibration": "usage", "anchor_messages": 1,
            "summary_check": "append"}
BIG = {"id": "big", "limits": {"context_window": 12000, "max_output_tokens": 1000}}
SMALLER = {"id": "smaller", "limits": {"context_window": 6000, "max_output_tokens": 500}}
# What the console sends with a preview, but for the flag itself.
CONSOLE = {"allow_compaction": False, "allow_prune": True, "request_overhead_tokens": 64,
           "thinking_level": "low"}


def answer(payload: dict[str, Any], ctx: HandlerContext) -> str:
    """The bytes an engine caller receives: the answer, or the error envelope's message."""
    try:
        return dumps_wire(asyncio.run(handle(payload, ctx))).decode()
    except ContextManagerError as exc:
        return "error: " + error_envelope(exc)[1]


def with_options(payload: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {**payload, "options": {**payload.get("options", {}), **options}}


# --- decoding -------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("yes", 'invalid type: string "yes", expected a boolean'),
    (1, "invalid type: integer `1`, expected a boolean"),
    ([], "invalid type: sequence, expected a boolean"),
    ({}, "invalid type: map, expected a boolean"),
])
def test_preview_only_must_be_a_boolean(value: Any, message: str) -> None:
    payload = {"messages": EXAMPLE_10, "model": SMALL, "options": {"preview_only": value}}
    with pytest.raises(CallError) as failure:
        call("context::assemble", payload)
    assert (failure.value.code, failure.value.message) == ("invocation_failed", "serialization error: " + message)


def test_absent_null_and_false_decode_alike() -> None:
    assert decode_options({}).preview_only is False
    assert decode_options({"preview_only": None}).preview_only is False
    assert decode_options({"preview_only": False}).preview_only is False
    assert decode_options({"preview_only": True}).preview_only is True


def test_false_or_null_is_an_ordinary_call_that_compacts() -> None:
    summarizer = FakeSummarizer()
    plain = answer({"messages": EXAMPLE_10, "model": SMALL},
                   HandlerContext(summarizer=summarizer, lease_store=MemoryLeaseStore(), clock=ManualClock(1)))
    assert '"compacted":true' in plain and summarizer.calls == 2  # the head goes in two parts
    for value in (False, None):
        summarizer = FakeSummarizer()
        ctx = HandlerContext(summarizer=summarizer, lease_store=MemoryLeaseStore(), clock=ManualClock(1))
        assert answer({"messages": EXAMPLE_10, "model": SMALL, "options": {"preview_only": value}}, ctx) == plain
        assert summarizer.calls == 2


# --- the answer -----------------------------------------------------------------------------


@pytest.mark.parametrize("allow_compaction", [None, True, False])
def test_a_preview_that_would_need_compaction_gets_the_overflow_of_allow_compaction_false(
        allow_compaction: bool | None) -> None:
    summarizer, leases = FakeSummarizer(), MemoryLeaseStore()
    ctx = HandlerContext(summarizer=summarizer, lease_store=leases, clock=ManualClock(1))
    options: dict[str, Any] = {"preview_only": True}
    if allow_compaction is not None:
        options["allow_compaction"] = allow_compaction
    preview = answer({"messages": EXAMPLE_10, "model": SMALL, "options": options}, ctx)
    assert preview == "error: " + OVERFLOW
    assert (summarizer.calls, leases.log, leases.records) == (0, [], {})
    control = answer({"messages": EXAMPLE_10, "model": SMALL, "options": {"allow_compaction": False}}, ctx)
    assert preview == control
    assert summarizer.calls == 0


@pytest.mark.parametrize("allow_compaction", [None, True])
def test_a_preview_answers_byte_for_byte_as_allow_compaction_false(allow_compaction: bool | None) -> None:
    config = parse_config_value({"overflow_fallback": "drop_oldest"})
    summarizer, leases = FakeSummarizer(), MemoryLeaseStore()
    ctx = HandlerContext(config=config, summarizer=summarizer, lease_store=leases, clock=ManualClock(1))
    options: dict[str, Any] = {"preview_only": True, "request_overhead_tokens": 64}
    if allow_compaction is not None:
        options["allow_compaction"] = allow_compaction
    preview = answer({"messages": EXAMPLE_10, "model": SMALL, "options": options}, ctx)
    control = answer({"messages": EXAMPLE_10, "model": SMALL,
                      "options": {"allow_compaction": False, "request_overhead_tokens": 64}}, ctx)
    assert preview == control
    assert '"compacted":false' in preview and '"dropped_messages":2' in preview
    assert '"token_count":3169' in preview and '"usable":4000' in preview
    assert (summarizer.calls, leases.log) == (0, [])
    # The same request without the flag compacts: the preview is what kept the summariser out.
    assert '"compacted":true' in answer({"messages": EXAMPLE_10, "model": SMALL,
                                         "options": {"request_overhead_tokens": 64}}, ctx)
    assert summarizer.calls == 2


def test_a_library_preview_takes_no_lease_and_creates_no_lease_directory(tmp_path: Path) -> None:
    config = {"lease_dir": str(tmp_path / "leases")}
    asked: list[str] = []

    def summarize(system: str, prompt: str, model: dict[str, Any]) -> str:
        asked.append(prompt)
        return "## Goal\n- ship"

    payload = {"messages": EXAMPLE_10, "model": SMALL, "options": {"preview_only": True}}
    with pytest.raises(CallError) as failure:
        call("context::assemble", payload, config=config, summarizer=summarize)
    assert failure.value.message == OVERFLOW
    assert asked == [] and not (tmp_path / "leases").exists()
    # Without the flag the same call takes a lease (its directory is made) and summarises.
    assert call("context::assemble", {"messages": EXAMPLE_10, "model": SMALL}, config=config,
                summarizer=summarize)["applied"]["compacted"] is True
    assert len(asked) == 2 and (tmp_path / "leases").is_dir()


def test_a_preview_never_compacts_even_without_a_model() -> None:
    # The extractive fallback summarises with no summariser at all: a preview still does not.
    config = parse_config_value({"summarizer_fallback": "extractive"})
    ctx = HandlerContext(config=config, lease_store=MemoryLeaseStore(), clock=ManualClock(1))
    assert '"summary_kind":"extractive"' in answer({"messages": EXAMPLE_10, "model": SMALL}, ctx)
    preview = answer({"messages": EXAMPLE_10, "model": SMALL, "options": {"preview_only": True}}, ctx)
    assert preview == "error: " + OVERFLOW
    assert preview == answer({"messages": EXAMPLE_10, "model": SMALL, "options": {"allow_compaction": False}}, ctx)


# --- nothing left behind --------------------------------------------------------------------


@cache
def _session(rounds: int) -> tuple[dict[str, Any], ...]:
    """An agent session on ``BIG``: each assistant message carries the provider's count of the
    prompt that produced it (the whole history before it, 5% over our estimate)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "fix the bug in parser.py"}], "timestamp": 1}]
    for i in range(rounds):
        estimate = call("context::count-tokens", {"messages": messages, "model": BIG})["tokens"]
        messages.append({"role": "assistant", "stop_reason": "function_call", "model": "big", "provider": "p",
                         "timestamp": 2 + 2 * i, "usage": {"input": estimate * 105 // 100, "output": 50},
                         "content": [{"type": "text", "text": f"step {i} " + "z" * 1500},
                                     {"type": "function_call", "id": f"c{i}", "function_id": "fs::read",
                                      "arguments": {"path": f"f{i}.py"}}]})
        messages.append({"role": "function_result", "function_call_id": f"c{i}", "function_id": "fs::read",
                         "content": [{"type": "text", "text": f"line {i}\n" * 100}], "timestamp": 3 + 2 * i})
    return tuple(messages)


def turns() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two real turns of one session: the second sends the first's history grown by one round
    whose assistant message carries the provider's count of what the first returned."""
    first = list(_session(14))
    second = [*first,
              {"role": "assistant", "stop_reason": "function_call", "model": "big", "provider": "p",
               "timestamp": 100, "usage": {"input": 1595, "output": 40},
               "content": [{"type": "function_call", "id": "c99", "function_id": "fs::read",
                            "arguments": {"path": "parser.py"}}]},
              {"role": "function_result", "function_call_id": "c99", "function_id": "fs::read",
               "content": [{"type": "text", "text": "def parse(): ..."}], "timestamp": 101}]
    options = {"lease_key": "session-1", "request_overhead_tokens": 64}
    return ({"messages": first, "model": BIG, "options": options},
            {"messages": second, "model": BIG, "options": options})


class Process:
    """What one process keeps between calls: its session store, its ledger, its summariser."""

    def __init__(self) -> None:
        self.store = MemorySessionStore()
        self.ledger = SentLedger()
        self.prompts: list[str] = []

    def summarize(self, system: str, prompt: str, model: dict[str, Any]) -> str:
        self.prompts.append(prompt)
        return f"## Goal\n- fix the parser (summary {len(self.prompts)})"

    def context(self, config: dict[str, Any] = STATEFUL) -> HandlerContext:
        ctx = build_context(parse_config_value(config), self.summarize)
        ctx.session_store, ctx.sent_ledger, ctx.memo = self.store, self.ledger, None
        ctx.lease_store = MemoryLeaseStore()
        return ctx

    def snapshot(self) -> tuple[Any, ...]:
        return (list(self.store._records.keys()), list(self.store._records.values()),
                list(self.ledger._entries.items()), len(self.prompts))


def console_preview(payload: dict[str, Any]) -> dict[str, Any]:
    """The console's preview of ``payload``'s history on ``SMALLER`` (no lease key: it names no
    session)."""
    return {"messages": payload["messages"], "model": SMALLER, "options": {"preview_only": True, **CONSOLE}}


def without_flag(preview: dict[str, Any]) -> dict[str, Any]:
    options = {k: v for k, v in preview["options"].items() if k != "preview_only"}
    return {**preview, "options": options}


def test_a_preview_between_two_turns_leaves_the_second_turn_as_it_was() -> None:
    first, second = turns()
    alone = Process()
    expected = [answer(first, alone.context()), answer(second, alone.context())]
    # The run exercises what it should: a compaction remembered, then reused, and a count
    # anchored on what this process returned (the ledger's estimate of it).
    assert '"compacted":true' in expected[0] and '"summary_reused":true' in expected[1]
    assert json.loads(expected[1])["breakdown"]["calibration"] == {
        "anchor_index": 5, "growth_ratio": 1.1008, "provider_tokens": 1595, "ratio": 1.1008}
    assert len(alone.store) == 1 and len(alone.ledger) == 1

    process = Process()
    assert answer(first, process.context()) == expected[0]
    before = process.snapshot()
    preview = console_preview(first)
    previewed = answer(preview, process.context())
    assert previewed == ("error: handler error: context/overflow: assembled context requires 9396 tokens "
                         "but usable budget is 4900")
    assert process.snapshot() == before
    assert answer(without_flag(preview), process.context()) == previewed
    assert answer(second, process.context()) == expected[1]


def test_a_preview_that_fits_remembers_nothing_where_the_same_call_would() -> None:
    first, second = turns()
    config = {**STATEFUL, "overflow_fallback": "drop_oldest"}
    alone = Process()
    expected = [answer(first, alone.context(config)), answer(second, alone.context(config))]
    process = Process()
    answer(first, process.context(config))
    before = process.snapshot()
    preview = console_preview(first)
    previewed = answer(preview, process.context(config))
    applied = json.loads(previewed)["applied"]
    assert (applied["compacted"], applied["dropped_messages"], applied["dropped_ranges"]) == (False, 14, [[1, 15]])
    assert process.snapshot() == before
    assert answer(second, process.context(config)) == expected[1]
    # The same request as an ordinary call records the context it reduced in the ledger.
    assert answer(without_flag(preview), process.context(config)) == previewed
    assert len(process.ledger) == len(before[2]) + 1


def test_a_preview_reads_a_remembered_compaction_without_refreshing_it() -> None:
    first, _ = turns()
    process = Process()
    answer(first, process.context())
    asyncio.run(process.store.put("other-session", RememberedCompaction("s", 2, "d" * 64, 0)))
    order = list(process.store._records.keys())
    assert order == ["session-1", "other-session"]
    # A round trip read from the store, exactly as the control call reads it.
    grown = with_options(turns()[1], preview_only=True, allow_compaction=False)
    previewed = answer(grown, process.context())
    assert '"summary_reused":true' in previewed
    assert list(process.store._records.keys()) == order
    control = with_options(turns()[1], allow_compaction=False)
    assert answer(control, process.context()) == previewed
    assert list(process.store._records.keys()) == ["other-session", "session-1"]  # a use, by get


def test_a_preview_leaves_an_expired_record_in_the_state_store() -> None:
    state, clock = EngineState(), ManualClock(1_000)
    store = StateSessionStore(state, clock, 60, logging.getLogger("t"))
    asyncio.run(store.put("session-1", RememberedCompaction("## Goal\n- ship", 3, "d" * 64, 1)))
    clock.advance(60_000)  # expired
    state.calls.clear()
    ctx = HandlerContext(config=parse_config_value(STATEFUL), session_store=store, sent_ledger=SentLedger(),
                         memo=None, clock=clock)
    first, _ = turns()
    previewed = answer(with_options(first, preview_only=True), ctx)
    assert [c[0] for c in state.calls] == ["state::get"]
    assert "session-1" in state.store.groups["context_session"]
    control = answer(with_options(first, allow_compaction=False), ctx)
    assert control == previewed
    assert [c[0] for c in state.calls] == ["state::get", "state::get", "state::delete"]
    assert state.store.groups == {}


def test_every_member_of_the_deps_is_kept_or_withheld() -> None:
    protocol = set(AssembleDeps.__annotations__) | {
        name for name, value in vars(AssembleDeps).items() if isinstance(value, property)}
    assert set(KEPT) | set(WITHHELD) == protocol and not set(KEPT) & set(WITHHELD)
    assert set(ReadOnlyDeps.__dataclass_fields__) == protocol

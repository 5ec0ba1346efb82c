"""`summary_reuse`: a caller that does not persist the round trip gets the round trip's answer."""

from __future__ import annotations

import anyio

from context_manager.adapters.memory_session_store import RECORD_OVERHEAD_BYTES, MemorySessionStore
from context_manager.api import LIBRARY_SESSIONS, build_context, run_handler
from context_manager.config.parse import parse_config_value
from context_manager.core.compaction.lease import default_lease_key
from context_manager.ports import RememberedCompaction
from context_manager.wire.decode import decode_messages
from tests.core.passes.test_drop_oldest import _session

REUSE = {"summary_reuse": True}


class Summaries:
    """A summariser that numbers its replies and records the prompts it was given."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, system: str, prompt: str, model: dict) -> str:
        self.prompts.append(system + "\n" + prompt)
        return f"SUMMARY {len(self.prompts)}"


def _assemble(payload: dict, config: dict, summaries: Summaries, store: MemorySessionStore | None):
    ctx = build_context(parse_config_value(config), summaries)
    ctx.session_store = store
    ctx.memo = None
    ctx.lease_store = None
    return run_handler("context::assemble", payload, ctx)


def _grown(rounds: int, text: str = "task one") -> dict:
    payload = _session(rounds, "ok")
    payload["messages"][0]["content"][0]["text"] = text
    payload["system_prompt"] = "base"
    return payload


def test_a_history_that_extends_the_summarised_head_reuses_its_summary():
    store, summaries = MemorySessionStore(), Summaries()
    first = _assemble(_grown(12), REUSE, summaries, store)
    asked = len(summaries.prompts)
    assert first["applied"]["compacted"] is True and asked >= 1
    assert "summary_reused" not in first["applied"]
    tail = first["applied"]["tail_start_index"]
    summary = first["applied"]["summary"]

    second = _assemble(_grown(13), REUSE, summaries, store)
    assert len(summaries.prompts) == asked  # no new summary
    applied = second["applied"]
    assert applied["summary_reused"] is True and applied["reused_from_index"] == tail
    # exactly what the caller would get by persisting the round trip itself
    round_trip = _grown(13)
    round_trip["messages"] = round_trip["messages"][tail:]
    round_trip["options"] = {"previous_summary": summary}
    expected = _assemble(round_trip, {}, Summaries(), None)
    del applied["summary_reused"], applied["reused_from_index"]
    assert second == expected
    assert summary in second["system_prompt"]


def test_over_budget_again_summarises_once_more_on_top_of_the_remembered_summary():
    store, summaries = MemorySessionStore(), Summaries()
    first = _assemble(_grown(12), REUSE, summaries, store)
    asked = len(summaries.prompts)
    rounds, answer = 12, first
    while len(summaries.prompts) == asked:
        rounds += 1
        answer = _assemble(_grown(rounds), REUSE, summaries, store)
        assert rounds < 40
    assert answer["applied"]["compacted"] is True and answer["applied"]["summary_reused"] is True
    # the update is built on the remembered summary
    assert first["applied"]["summary"] in summaries.prompts[asked]
    asked = len(summaries.prompts)
    after = _assemble(_grown(rounds + 1), REUSE, summaries, store)
    assert len(summaries.prompts) == asked
    assert answer["applied"]["summary"] in after["system_prompt"]
    # the remembered tail start is in the caller's indices: beyond the first compaction's
    assert after["applied"]["reused_from_index"] > first["applied"]["tail_start_index"]


def test_an_edited_old_message_means_no_reuse():
    store, summaries = MemorySessionStore(), Summaries()
    _assemble(_grown(12), REUSE, summaries, store)
    asked = len(summaries.prompts)
    edited = _grown(13)
    edited["messages"][2]["content"][0]["text"] = "an edited old result"
    answer = _assemble(edited, REUSE, summaries, store)
    assert "summary_reused" not in answer["applied"] and answer["applied"]["compacted"] is True
    assert len(summaries.prompts) > asked


def test_sessions_with_other_first_messages_do_not_meet():
    store, summaries = MemorySessionStore(), Summaries()
    _assemble(_grown(12, "task one"), REUSE, summaries, store)
    asked = len(summaries.prompts)
    other = _assemble(_grown(13, "task two"), REUSE, summaries, store)
    assert "summary_reused" not in other["applied"] and len(summaries.prompts) > asked
    assert len(store) == 2


def test_the_lease_key_names_the_session():
    store, summaries = MemorySessionStore(), Summaries()
    payload = {**_grown(12), "options": {"lease_key": "session-7"}}
    first = _assemble(payload, REUSE, summaries, store)
    record = anyio.run(store.get, "session-7")
    tail = first["applied"]["tail_start_index"]
    assert record == RememberedCompaction(first["applied"]["summary"], tail,
                                          default_lease_key(decode_messages(payload["messages"][:tail])), 0)
    grown = {**_grown(13), "options": {"lease_key": "session-7"}}
    assert _assemble(grown, REUSE, summaries, store)["applied"]["summary_reused"] is True


def test_off_by_default_and_when_the_caller_sends_the_round_trip():
    store, summaries = MemorySessionStore(), Summaries()
    _assemble(_grown(12), {}, summaries, store)
    asked = len(summaries.prompts)
    assert len(store) == 0
    assert "summary_reused" not in _assemble(_grown(13), {}, summaries, store)["applied"]
    assert len(summaries.prompts) > asked
    with_summary = {**_grown(12), "options": {"previous_summary": "mine"}}
    _assemble(with_summary, REUSE, summaries, store)
    assert len(store) == 0  # the caller keeps its own round trip


def test_the_pinned_anchor_stays_ahead_of_the_reused_tail():
    store, summaries = MemorySessionStore(), Summaries()
    config = {**REUSE, "anchor_messages": 1}
    first = _assemble(_grown(12), config, summaries, store)
    asked = len(summaries.prompts)
    assert first["applied"]["compacted"] is True
    second = _assemble(_grown(13), config, summaries, store)
    assert second["applied"]["summary_reused"] is True and len(summaries.prompts) == asked
    assert second["messages"][0]["content"][0]["text"] == "task one"
    tail = second["applied"]["reused_from_index"]
    assert tail == first["applied"]["tail_start_index"] > 1
    expected = _grown(13)["messages"][tail]
    assert second["messages"][1]["timestamp"] == expected["timestamp"]


def test_library_calls_share_one_store():
    from context_manager import call

    summaries = Summaries()
    payload = _grown(12, "a library session")
    call("context::assemble", payload, config=REUSE, summarizer=summaries)
    asked = len(summaries.prompts)
    answer = call("context::assemble", _grown(13, "a library session"), config=REUSE, summarizer=summaries)
    assert answer["applied"]["summary_reused"] is True and len(summaries.prompts) == asked
    assert anyio.run(LIBRARY_SESSIONS.get, default_lease_key(payload["messages"][:1])) is not None


def test_the_store_is_bounded_by_bytes_and_evicts_the_least_recently_used():
    record = RememberedCompaction("s" * 100, 3, "d", 0)
    cost = 100 + 1 + RECORD_OVERHEAD_BYTES
    store = MemorySessionStore(max_bytes=2 * cost)
    anyio.run(store.put, "a", record)
    anyio.run(store.put, "b", record)
    assert anyio.run(store.get, "a") == record  # a is now the most recently used
    anyio.run(store.put, "c", record)
    assert anyio.run(store.get, "b") is None
    assert anyio.run(store.get, "a") == record and len(store) == 2
    assert store.size_bytes == 2 * cost
    anyio.run(store.put, "a", RememberedCompaction("s" * 10_000, 3, "d", 0))
    assert anyio.run(store.get, "a") is None  # too large to keep, and the old record is gone

"""The suites' one cost model (bench/kit/ledger) and the replay's economy table."""

from __future__ import annotations

import anyio
import pytest
from helpers import assistant, user

from bench.kit.ledger import Ledger, cached_prefix_tokens, count
from bench.kit.loop import round_trip
from bench.kit.modes import Mode
from bench.kit.summariser import RecordingSummarizer, summarize
from bench.replay.__main__ import main
from bench.replay.replay import MODES_BY_NAME, ReplayStats, replay, shipped_sessions
from bench.replay.tables import economy_rows
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.ports import SummarizerConversation, SummarizeRequest


def test_the_cached_prefix_is_the_prompt_and_the_leading_equal_messages():
    a, b, c = user("a" * 40), assistant("b" * 80), user("c" * 120)
    prompt = "p" * 400  # 100 tokens
    assert cached_prefix_tokens(None, (prompt, [a])) == 0
    assert cached_prefix_tokens((prompt, [a, b]), (prompt, [a, b, c])) == (
        100 + HEURISTIC.message(a) + HEURISTIC.message(b))
    assert cached_prefix_tokens((prompt, [a, c]), (prompt, [a, b, c])) == 100 + HEURISTIC.message(a)
    assert cached_prefix_tokens((prompt, [a]), ("other", [a])) == 0


def test_the_ledger_prices_every_request_alike():
    ledger = Ledger(sent=2200, cached=1000)
    ledger.summarise(300, 50)
    assert (ledger.input, ledger.input_cached, ledger.summarizer_tokens) == (2500, 1000, 350)
    assert ledger.billed_automatic == pytest.approx(0.1 * 1000 + 1500 + 50)
    # the summariser's input is written like any request's, its reply paid at 1
    assert ledger.billed_anthropic == pytest.approx(0.1 * 1000 + 1.25 * 1500 + 50)
    ledger.summarise(400, 10, cached=300)  # a request that repeats the context sent before it
    assert ledger.billed_automatic == pytest.approx(0.1 * 1300 + 1600 + 60)
    assert ledger.billed_anthropic == pytest.approx(0.1 * 1300 + 1.25 * 1600 + 60)


def test_economy_rows_sum_over_sessions():
    first = ReplayStats("a", "32k", "m", compacted=2, prompt_changed_at_compaction=2,
                        bill=Ledger(calls=3, rewrites=1, sent=2_000_000, cached=1_000_000))
    second = ReplayStats("b", "32k", "m", compacted=1,
                         bill=Ledger(calls=2, sent=1_000_000, summarizer_calls=2, summarizer_input=10_000))
    assert economy_rows([("32k", "m", first), ("32k", "m", second)]) == [
        ("32k", "m", "5", "3.00 M", "1", "0", "3", "2", "2", "0.01 M", "2.11 M", "2.61 M")]


@pytest.mark.slow
def test_reuse_gives_a_non_persisting_harness_the_round_trip_bill():
    session = next(s for s in shipped_sessions() if s.name.startswith("single-"))
    round_trip = replay(session, "32k", MODES_BY_NAME["summariser"])
    plain = replay(session, "32k", MODES_BY_NAME["summariser-nopersist"])
    reused = replay(session, "32k", MODES_BY_NAME["summariser-nopersist+reuse"])
    assert reused.bill == round_trip.bill and reused.cache_busts == round_trip.cache_busts
    assert reused.overflows == 0
    assert plain.bill.summarizer_calls > 5 * round_trip.bill.summarizer_calls


@pytest.mark.slow
def test_economy_flag_prints_one_row_per_budget_and_mode(capsys):
    assert main(["--economy", "--sessions", "multi-api-pagination", "--budgets", "16k,32k",
                 "--modes", "none,none+drop_oldest+reduce"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| budget | mode ")
    assert [line.split("|")[1:3] for line in lines[2:6]] == [
        [" 16k    ", " none                    "], [" 16k    ", " none+drop_oldest+reduce "],
        [" 32k    ", " none                    "], [" 32k    ", " none+drop_oldest+reduce "]]
    assert lines[6] == ""


@pytest.mark.slow
def test_message_placement_keeps_the_system_prompt_through_every_compaction():
    session = next(s for s in shipped_sessions() if s.name.startswith("single-"))
    default = replay(session, "32k", MODES_BY_NAME["summariser"])
    placed = replay(session, "32k", MODES_BY_NAME["summariser+message"])
    assert placed.compacted == default.compacted > 0
    assert default.prompt_changed_at_compaction == default.compacted
    assert placed.prompt_changed_at_compaction == 0
    assert placed.overflows == 0


def test_the_recorder_bills_a_conversation_request_on_its_own_form():
    head = (user("fix the parser " + "x" * 400), assistant("reading it"))
    conversation = SummarizerConversation("You are a coder.", head, (), "Summarise the above.")
    request = SummarizeRequest("Write a fresh anchored summary.", "[user]\nfix the parser", "m",
                               conversation=conversation)
    recorder = RecordingSummarizer()
    reply = anyio.run(recorder.summarize, request)
    # the stand-in reads the rendered form; the bill is the conversation's
    assert reply == summarize("Write a fresh anchored summary.", "[user]\nfix the parser", None)
    instruction = {"role": "user", "content": [{"type": "text", "text": "Summarise the above."}]}
    assert recorder.inputs == [count("You are a coder.", [*head, instruction])]
    assert recorder.conversations == [("You are a coder.", list(head))]
    assert recorder.input_tokens == recorder.inputs[0]
    # a rendered request through the port is billed as the function form bills it
    anyio.run(recorder.summarize, SummarizeRequest("sys" * 4, "user" * 10, "m"))
    assert (recorder.inputs[1], recorder.conversations[1]) == ((12 + 40) // 4, None)


def test_a_round_trip_in_conversation_form_reads_the_head_from_the_previous_context():
    session = shipped_sessions()[0]
    rendered = round_trip(session, Mode("r", True, {"profile": "recommended", "summarizer_request": "rendered"}),
                          32_000)
    conversation = round_trip(session, Mode("c", True, {"profile": "recommended"}), 32_000)
    # the same contexts sent; only the summariser's requests change form
    assert (conversation.calls, conversation.sent, conversation.cached, conversation.summarizer_calls) == (
        rendered.calls, rendered.sent, rendered.cached, rendered.summarizer_calls)
    # rendered: the head as text, outputs cut, nothing cached; as the conversation: the head's
    # messages whole, most of them read from the context sent before
    assert (rendered.summarizer_calls, rendered.summarizer_input, rendered.summarizer_cached) == (7, 42144, 0)
    assert (conversation.summarizer_input, conversation.summarizer_cached) == (88286, 72533)
    assert round(rendered.billed_automatic) == 308981 and round(conversation.billed_automatic) == 289843

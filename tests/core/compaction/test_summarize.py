"""The bounded summarisation pipeline (spec 03 §3.1–§3.6; Examples 10–12)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from compaction_support import A, FakeSummarizer, U, X, decoded

from context_manager.core.compaction import prompts as p
from context_manager.core.compaction.summarize import (
    MAX_CHUNKS,
    fitting_prefix,
    pipeline_deadline_ms,
    preflight_chunk_bound,
    request_tokens,
    summarize_head,
)
from context_manager.core.counting.estimate import HEURISTIC
from context_manager.core.settings import DEFAULT_CONFIG
from context_manager.ports import (
    SummarizeError,
    SummarizerEmpty,
    SummarizerFailed,
    SummarizerUnavailable,
)
from context_manager.wire.decode import ModelInput

MODEL = ModelInput("small", "test")


def run(summarizer, head, budget, *, previous_summary=None, instructions=None, config=DEFAULT_CONFIG):
    return asyncio.run(summarize_head(
        summarizer, MODEL, head, budget,
        previous_summary=previous_summary, instructions=instructions, estimator=HEURISTIC,
        config=config,
    ))


def fragments(summarizer):
    """(system prompt bytes, [start, end) of the fragment, request_tokens) per call."""
    out, offset = [], 0
    for request in summarizer.requests:
        n = len(request.user_prompt.encode())
        out.append((len(request.system_prompt.encode()), (offset, offset + n),
                    request_tokens(HEURISTIC, request.system_prompt, request.user_prompt)))
        offset += n
    return out


def prompt_of(head):
    return p.render_user_prompt(p.strip_media(head, DEFAULT_CONFIG.max_output_chars))


EXAMPLE_10_HEAD = decoded(U(X(3000)), A("r0"), U(X(3000)))
EXAMPLE_11_HEAD = decoded(U(X(1000)), A("r0"), U(X(1000)))


# --- §3.2 request-size estimate --------------------------------------------------------------


def test_request_tokens_formula():
    system = "s" * 1099
    assert request_tokens(HEURISTIC, system, "") == 274 + 21 + 64
    # each newline, quote and backslash escapes to two bytes; other controls to six
    assert request_tokens(HEURISTIC, "", "a\nb") == (85 + 4) // 4 + 64
    assert request_tokens(HEURISTIC, "", '"\\\t') == (85 + 6) // 4 + 64
    assert request_tokens(HEURISTIC, "", "\x01") == (85 + 6) // 4 + 64
    assert request_tokens(HEURISTIC, "", "é") == (85 + 2) // 4 + 64


# --- §3.5 fitting_prefix ---------------------------------------------------------------------


def test_fitting_prefix_is_the_largest_fitting_character_boundary():
    text = ("東京🙂\\\"\n" * 300).encode()
    end = fitting_prefix(HEURISTIC, "summary", text, 300)
    assert 0 < end < len(text)
    assert request_tokens(HEURISTIC, "summary", text[:end].decode()) <= 300
    following = end + len(text[end:].decode()[0].encode())
    assert request_tokens(HEURISTIC, "summary", text[:following].decode()) > 300
    # brute force agrees
    best = max(b for b in range(len(text) + 1)
               if (b == len(text) or (text[b] & 0xC0) != 0x80)
               and request_tokens(HEURISTIC, "summary", text[:b].decode()) <= 300)
    assert end == best


def test_fitting_prefix_whole_text_and_nothing():
    assert fitting_prefix(HEURISTIC, "s", b"history", 1000) == 7
    assert fitting_prefix(HEURISTIC, "x" * 4000, b"history", 100) == 0


# --- §3.3 pre-flight ------------------------------------------------------------------------


def test_preflight_bound_at_thirty_two_fragments():
    capacity = 7
    per_fragment = capacity * 4 + 3
    assert preflight_chunk_bound(HEURISTIC, per_fragment * 32, 359 + capacity, None) == 32
    with pytest.raises(SummarizerFailed) as failure:
        preflight_chunk_bound(HEURISTIC, per_fragment * 32 + 1, 359 + capacity, None)
    assert failure.value.detail == "history needs at least 33 fragments; maximum is 32"


def test_preflight_counts_the_instructions():
    # guidance "G" adds floor((1099 + 289)/4) - floor(1099/4) = 347 - 274 = 73 tokens
    with pytest.raises(SummarizerFailed) as failure:
        preflight_chunk_bound(HEURISTIC, 10, 359 + 73, "G")
    assert failure.value.detail == "summary instructions leave no room for history within 432 tokens"
    # capacity 1 token: fragments of at most 7 bytes
    assert preflight_chunk_bound(HEURISTIC, 10, 359 + 74, "G") == 2


def test_example_12_preflight_rejections():
    head = decoded(U(X(3000)))
    assert len(prompt_of(head).encode()) == 12148
    summarizer = FakeSummarizer()
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, head, 400)
    assert failure.value.detail == "history needs at least 73 fragments; maximum is 32"
    assert str(failure.value) == "summariser failed: history needs at least 73 fragments; maximum is 32"
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, head, 359)
    assert failure.value.detail == "summary instructions leave no room for history within 359 tokens"
    assert summarizer.calls == 0


# --- §3.4 chunk loop -------------------------------------------------------------------------


def test_single_call_when_the_head_fits():
    head = decoded(U(X(9000)), A("r1"))
    summarizer = FakeSummarizer(replies=["## Goal\n- finish the migration"])
    assert run(summarizer, head, 172000) == "## Goal\n- finish the migration"
    (request,) = summarizer.requests
    assert request.system_prompt == p.build_system_prompt(None, None)  # no fragment note
    assert request.user_prompt == prompt_of(head)
    assert (request.model, request.provider) == ("small", "test")


def test_example_10_two_bounded_calls():
    assert len(prompt_of(EXAMPLE_10_HEAD).encode()) == 24173
    summarizer = FakeSummarizer(replies=["## Goal\n- ship the feature", "## Goal\n- ship the feature"])
    assert run(summarizer, EXAMPLE_10_HEAD, 4000) == "## Goal\n- ship the feature"
    assert fragments(summarizer) == [(1336, (0, 14315), 4000), (1486, (14315, 24173), 2921)]
    first, second = summarizer.requests
    assert first.system_prompt == p.build_system_prompt(None, None) + p.FRAGMENT_NOTE
    assert second.system_prompt == p.build_system_prompt("## Goal\n- ship the feature", None) + p.FRAGMENT_NOTE


def test_example_10_with_a_previous_summary():
    summarizer = FakeSummarizer(replies=["## Goal\n- ship the feature", "## Goal\n- NEW"])
    assert run(summarizer, EXAMPLE_10_HEAD, 4000, previous_summary="OLD-ANCHOR-TEXT") == "## Goal\n- NEW"
    assert [f[:2] for f in fragments(summarizer)] == [(1238 + 237, (0, 14179)), (1486, (14179, 24173))]
    first, second = summarizer.requests
    assert "<previous-summary>\nOLD-ANCHOR-TEXT\n</previous-summary>" in first.system_prompt
    assert "OLD-ANCHOR-TEXT" not in second.system_prompt
    assert "<previous-summary>\n## Goal\n- ship the feature\n</previous-summary>" in second.system_prompt


def test_example_11_four_calls_with_exact_boundaries():
    assert len(prompt_of(EXAMPLE_11_HEAD).encode()) == 8173
    summarizer = FakeSummarizer(replies=[f"## Goal\n- S{i}" for i in range(1, 5)])
    assert run(summarizer, EXAMPLE_11_HEAD, 1100) == "## Goal\n- S4"
    assert fragments(summarizer) == [
        (1336, (0, 2721), 1100),
        (1472, (2721, 5305), 1100),
        (1472, (5305, 7895), 1100),
        (1472, (7895, 8173), 523),
    ]
    # call 1's boundary: 334 system tokens + (85 + 2721 + 5 escaped newlines) // 4 + 64
    assert 1336 // 4 + (85 + 2721 + 5) // 4 + 64 == 1100
    assert "".join(r.user_prompt for r in summarizer.requests) == prompt_of(EXAMPLE_11_HEAD)
    assert [r.system_prompt.count("- S") for r in summarizer.requests] == [0, 1, 1, 1]


def test_example_11_with_a_smaller_budget():
    summarizer = FakeSummarizer(replies=[f"## Goal\n- S{i}" for i in range(1, 5)])
    run(summarizer, EXAMPLE_11_HEAD, 1000)
    assert [f[1][1] for f in fragments(summarizer)] == [2321, 4505, 6695, 8173]


def test_the_last_reply_is_returned_untrimmed():
    summarizer = FakeSummarizer(replies=["  ## Goal\n- S1  \n"])
    assert run(summarizer, EXAMPLE_11_HEAD, 100000) == "  ## Goal\n- S1  \n"


def test_a_blank_reply_is_empty_even_mid_pipeline():
    summarizer = FakeSummarizer(replies=["## Goal\n- S1", " \n\u3000 "])
    with pytest.raises(SummarizerEmpty) as failure:
        run(summarizer, EXAMPLE_11_HEAD, 1100)
    assert str(failure.value) == "summariser returned an empty summary"
    assert summarizer.calls == 2


def test_more_than_32_calls_fail_without_a_partial_summary():
    # A long anchor leaves so little room per call that 32 calls cannot cover the history.
    head = decoded(U(X(2000)))
    summarizer = FakeSummarizer(respond=lambda r: "## Goal\n- " + "s" * 266)
    budget = 359 + 200
    # the pre-flight bound allows it: only the anchors make it impossible
    assert preflight_chunk_bound(HEURISTIC, len(prompt_of(head).encode()), budget, None) == 11
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, head, budget)
    assert failure.value.detail == "history requires more than 32 bounded summary calls"
    assert summarizer.calls == MAX_CHUNKS


def test_an_anchor_that_leaves_no_room():
    summarizer = FakeSummarizer(replies=["## Goal\n- " + "y" * 4000])
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, EXAMPLE_11_HEAD, 1100)
    assert failure.value.detail == "summary instructions and anchor leave no room for history within 1100 tokens"
    assert summarizer.calls == 1


def test_errors_of_the_summariser_propagate_with_their_kind():
    for error in (SummarizerUnavailable("function_not_found"), SummarizerFailed('"429 rate limited"')):
        summarizer = FakeSummarizer(replies=[error])
        with pytest.raises(SummarizeError) as failure:
            run(summarizer, EXAMPLE_11_HEAD, 100000)
        assert failure.value is error


def test_an_unexpected_adapter_exception_becomes_failed():
    summarizer = FakeSummarizer(replies=[ConnectionResetError("peer went away")])
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, EXAMPLE_11_HEAD, 100000)
    assert failure.value.detail == "peer went away"
    assert str(failure.value) == "summariser failed: peer went away"
    assert str(SummarizerUnavailable("x")) == "summariser unavailable: x"


def test_instructions_reach_every_chunk():
    summarizer = FakeSummarizer(replies=[f"## Goal\n- S{i}" for i in range(1, 9)])
    run(summarizer, EXAMPLE_11_HEAD, 1400, instructions="  keep the plan ")
    assert summarizer.calls > 1
    assert all(r.system_prompt.count("<instructions>\nkeep the plan\n</instructions>") == 1
               for r in summarizer.requests)


# --- §3.1 deadline ---------------------------------------------------------------------------


def test_pipeline_deadline():
    assert pipeline_deadline_ms(DEFAULT_CONFIG) == 299000
    assert pipeline_deadline_ms(replace(DEFAULT_CONFIG, lease_ttl_secs=1)) == 0
    assert pipeline_deadline_ms(replace(DEFAULT_CONFIG, lease_ttl_secs=0)) == 0
    assert pipeline_deadline_ms(replace(DEFAULT_CONFIG, summarizer_timeout_ms=5)) == 5
    assert pipeline_deadline_ms(replace(DEFAULT_CONFIG, lease_ttl_secs=(1 << 64))) == 320000


def test_a_slow_summariser_hits_the_deadline():
    config = replace(DEFAULT_CONFIG, summarizer_timeout_ms=50)
    summarizer = FakeSummarizer(delay=5.0)
    with pytest.raises(SummarizerFailed) as failure:
        run(summarizer, EXAMPLE_11_HEAD, 100000, config=config)
    assert failure.value.detail == "summary pipeline exceeded its time budget"


def test_the_deadline_covers_all_chunks_together():
    config = replace(DEFAULT_CONFIG, summarizer_timeout_ms=250)
    summarizer = FakeSummarizer(replies=[f"## Goal\n- S{i}" for i in range(1, 5)], delay=0.1)
    with pytest.raises(SummarizerFailed):
        run(summarizer, EXAMPLE_11_HEAD, 1100, config=config)
    assert summarizer.calls == 3


def test_zero_deadline_reports_preflight_errors_as_themselves():
    config = replace(DEFAULT_CONFIG, lease_ttl_secs=1)
    with pytest.raises(SummarizerFailed) as failure:
        run(FakeSummarizer(), decoded(U(X(3000))), 400, config=config)
    assert failure.value.detail == "history needs at least 73 fragments; maximum is 32"
    with pytest.raises(SummarizerFailed) as failure:
        run(FakeSummarizer(delay=0.01), EXAMPLE_11_HEAD, 100000, config=config)
    assert failure.value.detail == "summary pipeline exceeded its time budget"

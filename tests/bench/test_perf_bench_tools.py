"""The measurement commands of the performance criteria build what they claim to measure."""

from __future__ import annotations

import orjson

from bench.counting import tokenizer
from bench.speed import large_history
from context_manager.api import call


def test_the_large_history_is_400_messages_of_one_megabyte_that_pass_through() -> None:
    payload = large_history.payload()
    size = len(orjson.dumps(payload["messages"]))
    assert len(payload["messages"]) == 400
    assert 980_000 <= size <= 1_020_000
    applied = call("context::assemble", payload)["applied"]
    assert (applied["capped_parts"], applied["pruned"], applied["compacted"]) == (0, False, False)


def test_the_tokenizer_workload_counts_with_the_tokenizer() -> None:
    payload = tokenizer._on_gpt({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}],
                                               "timestamp": 1}],
                                 "model": {"id": "m"}})
    assert payload["model"] == {"id": "gpt-4o"}
    answer = call("context::count-tokens", payload, config={"estimator": "auto"})
    assert answer["estimator"] == "tokenizer"

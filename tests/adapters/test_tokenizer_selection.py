"""Estimator selection by model id and configuration, seen directly and through count-tokens."""

import pytest

from context_manager import call
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.adapters.tokenizers import encoding_name_for_model
from context_manager.core.counting.estimate import HEURISTIC, estimator_for_model
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig

AUTO = WorkerConfig(estimator="auto")


@pytest.mark.parametrize(("model_id", "encoding"), [
    ("gpt-4o", "o200k_base"),
    ("GPT-4o-mini", "o200k_base"),
    ("openai/gpt-4o-2024-08-06", "o200k_base"),
    ("gpt-4.1-nano", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-5-mini", "o200k_base"),
    ("o1-preview", "o200k_base"),
    ("o3-mini", "o200k_base"),
    ("O4-MINI", "o200k_base"),
    ("chatgpt-4o-latest", "o200k_base"),
    ("openrouter/o3", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-4-turbo", "cl100k_base"),
    ("gpt-4-0613", "cl100k_base"),
    ("openai/gpt-4-32k", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    ("claude-sonnet-4", None),
    ("anthropic/claude-3-5-haiku", None),
    ("llama-3.1-70b", None),
    ("m1", None),
    ("", None),
    ("openai/azure/gpt-4o", None),  # only one provider segment is stripped
    ("text-davinci-003", None),
    ("my-gpt-4o", None),
])
def test_model_table(model_id, encoding):
    assert encoding_name_for_model(model_id) == encoding


@pytest.mark.parametrize("config", [None, DEFAULT_CONFIG, WorkerConfig(estimator="heuristic")])
@pytest.mark.parametrize("model_id", ["gpt-4o", "gpt-4", "claude-sonnet-4", ""])
def test_heuristic_unless_opted_in(config, model_id):
    assert estimator_for_model(model_id, config, PACKAGED_TOKENIZERS) is HEURISTIC


def test_auto_selects_by_model():
    assert estimator_for_model("gpt-4o", AUTO, PACKAGED_TOKENIZERS).encoding.name == "o200k_base"
    assert estimator_for_model("gpt-3.5-turbo", AUTO, PACKAGED_TOKENIZERS).encoding.name == "cl100k_base"
    assert (estimator_for_model("gpt-4o", AUTO, PACKAGED_TOKENIZERS)
            is estimator_for_model("openai/GPT-4O", AUTO, PACKAGED_TOKENIZERS))
    assert estimator_for_model("claude-sonnet-4", AUTO, PACKAGED_TOKENIZERS) is HEURISTIC


class RecordingSource:
    """A TokenizerSource that answers ``exact`` for every model and notes what it was asked."""

    def __init__(self, exact):
        self.exact = exact
        self.asked = []

    def estimator_for(self, model_id):
        self.asked.append(model_id)
        return self.exact


@pytest.mark.parametrize("config", [None, DEFAULT_CONFIG, WorkerConfig(estimator="heuristic")])
def test_the_source_is_never_asked_unless_opted_in(config):
    source = RecordingSource(exact=object())
    assert estimator_for_model("gpt-4o", config, source) is HEURISTIC
    assert source.asked == []


def test_under_auto_the_source_decides_per_model():
    exact = object()
    assert estimator_for_model("gpt-4o", AUTO, RecordingSource(exact)) is exact
    declining = RecordingSource(exact=None)
    assert estimator_for_model("claude-sonnet-4", AUTO, declining) is HEURISTIC
    assert declining.asked == ["claude-sonnet-4"]


def test_auto_without_a_source_counts_with_the_heuristic():
    assert estimator_for_model("gpt-4o", AUTO, None) is HEURISTIC


W17_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "how warm is it now?"}], "timestamp": 1001},
    {"role": "assistant", "content": [{"type": "text", "text": "clear skies and a light wind."}],
     "stop_reason": "end", "model": "test-model", "provider": "test", "timestamp": 1002},
    {"role": "function_result", "function_call_id": "c1", "function_id": "weather::get",
     "content": [{"type": "text", "text": "22 degrees"}], "details": {}, "is_error": False, "timestamp": 1003},
    {"role": "custom", "custom_type": "ui_marker",
     "content": [{"type": "text", "text": "app-facing bookkeeping"}], "timestamp": 1004},
]
TOOL = {"name": "agent_trigger", "description": "Call one permitted iii function.",
        "parameters": {"type": "object", "properties": {"function": {"type": "string"}}}}
HEURISTIC_RESPONSE = {
    "tokens": 136 + 4 + 37,
    "by_role": {"user": 22, "assistant": 40, "function_result": 44, "custom": 30},
    "tools_tokens": 37,
    "by_part": {"identity": 4},
    "estimator": "heuristic",
}


def count(model_id, config):
    return call("context::count-tokens", {
        "model": {"id": model_id}, "messages": W17_MESSAGES, "system_prompt": "x" * 16,
        "tools": [TOOL], "parts": {"identity": "x" * 16},
    }, config=config)


@pytest.mark.parametrize(("model_id", "config"), [
    ("gpt-4o", None),
    ("gpt-4o", {"estimator": "heuristic"}),
    ("claude-sonnet-4", {"estimator": "auto"}),
    ("m1", {"estimator": "auto"}),
])
def test_count_tokens_keeps_the_original_numbers(model_id, config):
    assert count(model_id, config) == HEURISTIC_RESPONSE


def test_count_tokens_with_auto_on_gpt_4o_reports_the_tokenizer():
    response = count("gpt-4o", {"estimator": "auto"})
    # Each message: 4 framing + its text: "how warm is it now?" 6, "clear skies and a light wind." 7,
    # "22 degrees" 2 (the nulled details never count), "app-facing bookkeeping" 3.
    # Prompt "x"*16: 2 tokens; the tool's compact schema: 29.
    assert response == {
        "tokens": 10 + 11 + 6 + 7 + 2 + 29,
        "by_role": {"user": 10, "assistant": 11, "function_result": 6, "custom": 7},
        "tools_tokens": 29,
        "by_part": {"identity": 2},
        "estimator": "tokenizer",
    }


def test_count_tokens_with_auto_on_a_cl100k_model():
    response = count("gpt-3.5-turbo", {"estimator": "auto"})
    # cl100k splits "app-facing bookkeeping" into 4 tokens where o200k needs 3.
    assert response == {
        "tokens": 10 + 11 + 6 + 8 + 2 + 29,
        "by_role": {"user": 10, "assistant": 11, "function_result": 6, "custom": 8},
        "tools_tokens": 29,
        "by_part": {"identity": 2},
        "estimator": "tokenizer",
    }



def test_the_composition_roots_provide_the_packaged_tokenizers():
    from context_manager.api import build_context
    from context_manager.engine.client import EngineClient, worker_metadata
    from context_manager.worker import ConfigurationSource, Worker

    assert build_context(DEFAULT_CONFIG, None).tokenizers is PACKAGED_TOKENIZERS
    client = EngineClient("ws://127.0.0.1:9", worker_metadata("context-manager", "0.1.0"))
    worker = Worker(client, ConfigurationSource(client, "context-manager"))
    assert worker.context().tokenizers is PACKAGED_TOKENIZERS

"""`call(..., summarizer=fn)`: compaction standalone, with a plain synchronous function."""

import pytest

from context_manager import CallError, call


def _history(turns: int) -> list[dict]:
    messages = []
    ts = 1
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i} " + "q" * 2000}],
                         "timestamp": ts})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i} " + "a" * 2000}],
                         "stop_reason": "end", "model": "m", "provider": "p", "timestamp": ts + 1})
        ts += 2
    return messages


def _payload(turns: int = 12) -> dict:
    return {"model": {"id": "m", "provider": "p", "limits": {"context_window": 8000, "max_output_tokens": 1000}},
            "messages": _history(turns)}


@pytest.fixture
def lease_dir(tmp_path):
    return {"lease_dir": str(tmp_path / "leases")}


def test_assemble_compacts_with_a_plain_function(lease_dir, tmp_path):
    seen = []

    def summarizer(system_prompt: str, user_prompt: str, model: dict) -> str:
        seen.append((user_prompt, model))
        return "The user asked twelve questions about q and got answers about a."

    response = call("context::assemble", _payload(), config=lease_dir, summarizer=summarizer)
    applied = response["applied"]
    assert applied["compacted"] is True
    assert applied["summary"] == "The user asked twelve questions about q and got answers about a."
    assert "# Conversation summary" in response["system_prompt"]
    assert response["token_count"] <= response["usable"]
    assert "question 0" in seen[0][0]
    assert {str(model) for _, model in seen} == {
        str({"id": "m", "provider": "p", "limits": {"context_window": 8000, "max_output_tokens": 1000}})
    }
    # the lease was taken and released under the configured directory
    assert (tmp_path / "leases").is_dir()


def test_a_raising_summarizer_is_a_failed_summariser(lease_dir):
    def broken(system_prompt, user_prompt, model):
        raise RuntimeError("provider down")

    with pytest.raises(CallError, match="context/overflow"):
        call("context::assemble", _payload(), config=lease_dir, summarizer=broken)
    assert call("context::compact", _payload(), config=lease_dir, summarizer=broken)["status"] == "overflow"


def test_a_blank_reply_is_an_empty_summary(lease_dir):
    def blank(system_prompt, user_prompt, model):
        return "  \n"

    compact = call("context::compact", _payload(), config=lease_dir, summarizer=blank)
    assert compact["status"] == "empty"


def test_without_a_summarizer_no_lease_directory_is_created(tmp_path):
    config = {"lease_dir": str(tmp_path / "never")}
    with pytest.raises(CallError, match="context/overflow"):
        call("context::assemble", _payload(), config=config)
    assert not (tmp_path / "never").exists()


def test_a_summary_with_a_lone_surrogate_is_measured_by_its_surrogate_escaped_bytes(lease_dir):
    # A Python summariser can return what no JSON peer could; each lone surrogate weighs 3 bytes,
    # the same as a 3-byte character, and nothing fails.
    def replying(summary: str):
        return lambda system_prompt, user_prompt, model: summary

    padding = "s" * 397
    lone = call("context::compact", _payload(), config=lease_dir, summarizer=replying(padding + "\ud800"))
    euro = call("context::compact", _payload(), config=lease_dir, summarizer=replying(padding + "\u20ac"))
    ascii_400 = call("context::compact", _payload(), config=lease_dir, summarizer=replying(padding + "sss"))
    ascii_397 = call("context::compact", _payload(), config=lease_dir, summarizer=replying(padding))
    assert lone["summary"] == padding + "\ud800"
    assert lone["tokens_after"] == euro["tokens_after"] == ascii_400["tokens_after"] == ascii_397["tokens_after"] + 1

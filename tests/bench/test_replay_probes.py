"""The replay's retention probes count exactly what the retention check derives."""

from __future__ import annotations

from typing import Any

from compaction_support import FR, U, decoded

from bench.kit.tally import Share
from bench.replay.probes import Probes, head_probes
from context_manager.core.compaction.retention_check import must_keep, normalize


def call_with(call_id: str, arguments: Any) -> dict[str, Any]:
    return {"role": "assistant",
            "content": [{"type": "function_call", "id": call_id, "function_id": "bash",
                         "arguments": arguments}],
            "stop_reason": "function_call", "model": "test-model", "provider": "test"}


HEAD = decoded(
    U("Fix src/app.py, see https://example.com/spec"),
    call_with("c1", {"command": "cat /testbed/SRC/App.py", "files": ["src/APP.py", "docs/x.md"]}),
    FR("c1", "bash", "the result mentions /not/counted.py"),
    U("then docs/x.md"),
)


def test_the_probe_paths_are_the_checks_paths():
    user_texts = {normalize(m["content"][0]["text"]) for m in HEAD if m["role"] == "user"}
    check_paths = [normalize(item.text) for item in must_keep(HEAD)
                   if normalize(item.text) not in user_texts]
    assert check_paths == ["src/app.py", "https://example.com/spec", "/testbed/src/app.py", "docs/x.md"]
    # Nothing returned: every probe misses; the counts are the check's items.
    assert head_probes(HEAD, "") == Probes(users=Share(0, 2), paths=Share(0, 4))


def test_a_probe_is_found_with_whitespace_and_case_collapsed():
    returned = "FIX   src/app.py, see https://example.com/spec\n/TESTBED/src/app.py"
    assert head_probes(HEAD, returned) == Probes(users=Share(1, 2), paths=Share(3, 4))

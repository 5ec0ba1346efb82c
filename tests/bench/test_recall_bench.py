"""The long-range future-entity recall benchmark (bench/recall): its extraction and its sums."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.kit.entities import context_text, entities, full_text, mentions, normalize_entity
from bench.kit.recall import (
    Recall,
    RecallObserver,
    SessionIndex,
    future_entities,
    long_range_needs,
    recall_at_call,
)
from bench.recall.__main__ import main
from bench.recall.modes import budget, mode
from bench.replay.replay import Call, Session


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def assistant(text: str, **arguments: Any) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if arguments:
        content.append({"type": "function_call", "id": "c", "function_id": "bash", "arguments": arguments})
    return {"role": "assistant", "content": content, "stop_reason": "end", "model": "m",
            "provider": "p", "timestamp": 0}


def result(text: str) -> dict[str, Any]:
    return {"role": "function_result", "function_call_id": "c", "function_id": "bash",
            "content": [{"type": "text", "text": text}], "details": None, "timestamp": 0}


# --- extraction ------------------------------------------------------------------------------


def test_every_kind_of_entity_normalised():
    text = ("Fix `serialize()` in src/app/models.py and ./setup.py; see https://x.org/a_b.html. "
            "ValueError: bad! django.core.exceptions.ValidationError f.write(x) os.path.join(a) "
            "max_retries getUser JSONDecoder `pytest` and/or read/write src/app /abs/path e.g. "
            "the TimeDelta. Traceback self None run_it() `many=true`")
    assert entities(text) == {
        "serialize", "src/app/models.py", "setup.py", "https://x.org/a_b.html", "valueerror",
        "django.core.exceptions", "validationerror", "os.path.join", "max_retries", "getuser",
        "jsondecoder", "pytest", "/abs/path", "timedelta", "run_it"}
    assert entities(text, identifiers=False) == {
        "src/app/models.py", "setup.py", "https://x.org/a_b.html", "valueerror", "validationerror",
        "/abs/path"}


def test_normalisation_strips_punctuation_calls_and_dot_slash_and_drops_short_or_stop_words():
    assert normalize_entity("(./Src/App.py),") == "src/app.py"
    assert normalize_entity("'Serialize()'.") == "serialize"
    assert normalize_entity("a.b") is None  # shorter than 4
    assert normalize_entity("self") is None
    assert normalize_entity("startswith") is None
    assert normalize_entity("1_000") is None  # no letter


def test_what_a_message_mentions_and_what_it_holds():
    call = assistant("I will run `tox` on it", command="pytest tests/a_test.py::test_retry\ncleanup_tmp_dir()\n"
                     "cat > /tmp/x.py <<EOF\nimport helper_mod\nEOF", note=["see docs/guide.md"])
    assert mentions(call) == {"tests/a_test.py", "test_retry", "/tmp/x.py", "docs/guide.md"}
    assert mentions(result("src/hidden.py")) == set()
    assert mentions(user("the LeaseError again")) == {"leaseerror"}
    assert full_text(call) == ("I will run `tox` on it\nbash\npytest tests/a_test.py::test_retry\n"
                               "cleanup_tmp_dir()\ncat > /tmp/x.py <<EOF\nimport helper_mod\nEOF\n"
                               "see docs/guide.md")
    assert context_text("SYS", [user("u"), result("r")]) == "SYS\nu\nr"


# --- needs and recall ---------------------------------------------------------------------------


def history() -> list[dict[str, Any]]:
    """0: the request; 1-3: a search; 4-25: filler; 26: the call; 27-30: the future."""
    messages = [
        user("Fix the LeaseError in src/lease.py (see https://example.com/bug)"),
        assistant("searching", command="grep -rn acquire_lease src"),
        result("src/lease.py:10: def acquire_lease(\nsrc/store/backend.py:3: import lease"),
        assistant("The renew_window() helper looks wrong"),
    ]
    for step in range(4, 26):
        messages.append(result(f"step {step} ok") if step % 2 else assistant(f"step {step}"))
    messages[20] = assistant("recent_name is fine")
    messages.extend([
        assistant("Now open src/store/backend.py and re-check acquire_lease, recent_name",
                  command="pytest tests/test_lease.py"),  # 26
        result("1 failed: LeaseError"),  # 27: results mention nothing
        user("Also look at renew_window and https://example.com/bug"),  # 28
        assistant("and SYSTEM_TOOL, brand_new_thing"),  # 29
        assistant("src/lease.py"),  # 30: beyond the horizon of 3 below
    ])
    return messages


def test_needs_are_future_mentions_seen_before_the_window_and_not_in_it():
    index = SessionIndex("You may call system_tool.", history(), horizon=4, window=20)
    assert index.future_entities(26) == {
        "src/store/backend.py", "acquire_lease", "recent_name", "tests/test_lease.py",
        "renew_window", "https://example.com/bug", "system_tool", "brand_new_thing"}
    # recent_name: message 20 is in the window; tests/test_lease.py, brand_new_thing: never seen;
    # system_tool: in the system prompt.
    assert index.needs(26) == ["acquire_lease", "https://example.com/bug", "renew_window",
                               "src/store/backend.py"]
    assert index.first_seen("renew_window") == 3
    assert long_range_needs("You may call system_tool.", history(), 26, horizon=4) == index.needs(26)
    assert future_entities(history(), 29, horizon=1) == {"system_tool", "brand_new_thing"}
    # One message more of horizon reaches message 30 (src/lease.py, last seen in message 2).
    assert SessionIndex(None, history(), horizon=5, window=20).needs(26) == [
        "acquire_lease", "https://example.com/bug", "renew_window", "src/lease.py",
        "src/store/backend.py"]
    # A window reaching back to message 2 makes acquire_lease, backend.py and renew_window recent.
    assert SessionIndex(None, history(), horizon=4, window=24).needs(26) == ["https://example.com/bug"]


def test_recall_at_a_call_looks_needs_up_in_the_returned_context():
    index = SessionIndex(None, history(), horizon=4, window=20)
    returned = [user("Summary: ACQUIRE_LEASE   and src/store/backend.py"), result("renew_window()")]
    call = recall_at_call(index, 26, "see https://example.com/other", returned)
    assert call.needs == ("acquire_lease", "https://example.com/bug", "renew_window",
                          "src/store/backend.py")
    assert call.kept == ("acquire_lease", "renew_window", "src/store/backend.py")
    assert call.missing == ("https://example.com/bug",)
    assert recall_at_call(index, 26, None, None).kept == ()  # an overflow keeps nothing


def test_the_observer_sums_only_the_pressure_calls():
    session = Session("hand", None, history())
    observer = RecallObserver({"hand": {26}}, horizon=4)
    answer = {"system_prompt": "", "messages": [user("renew_window")]}
    observer(session, Call(24, [], None, answer))  # not a pressure call: ignored
    observer(session, Call(26, [], None, answer))
    observer(session, Call(26, [], None, None))
    assert (observer.recall.pressure_calls, observer.recall.needs, observer.recall.kept) == (2, 8, 1)
    assert observer.recall.missing["acquire_lease"] == 2
    assert observer.recall.share == 1 / 8
    assert Recall().share is None


def test_budgets_and_modes_by_name():
    assert budget("16k/2k") == ("16k", 2000)
    assert budget("32k/4k") == ("32k", 4000)
    assert budget("20k/2k") is None and budget("16k") is None
    assert mode("summariser+retention") is not None and mode("none+drop_oldest+anchor") is not None
    assert mode("nope") is None


def test_bad_arguments_are_refused(capsys, tmp_path: Path):
    assert main(["--modes", "nope", "--quick"]) == 2
    assert main(["--data", str(tmp_path / "absent")]) == 2
    assert main(["--data", str(tmp_path)]) == 2
    assert "no recorded sessions" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{not json")
    assert main(["--data", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("cannot read the recorded sessions: ")


@pytest.mark.slow
def test_quick_run_on_a_generated_session(capsys, tmp_path: Path):
    out = tmp_path / "rows.json"
    assert main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("### 16k/2k (1 sessions)\n\n| mode ")
    rows = json.loads(out.read_text())
    assert [(r["budget"], r["mode"]) for r in rows] == [("16k/2k", "summariser"),
                                                          ("16k/2k", "none+drop_oldest")]
    # The pressure calls and the needs come from the recording alone: the same in every mode.
    assert {(r["pressure_calls"], r["needs"]) for r in rows} == {(77, 70)}
    for r in rows:
        assert 0 <= r["kept"] <= r["needs"] and r["overflows"] == 0
        assert sum(count for _entity, count in r["missing"]) == r["needs"] - r["kept"]

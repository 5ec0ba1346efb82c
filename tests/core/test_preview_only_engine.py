"""``options.preview_only`` through the engine, with every key that keeps state between calls on
(remembered compactions and leases in the engine's state store, usage calibration and its
ledger, the pinned anchor, the retention check), served by one process and by two: a preview for
another model between two real turns leaves the second turn's answer byte for byte as it is
without the preview, writes nothing to the state store and calls no summariser; its answer is
the same request's with ``allow_compaction: false``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testengine import CallFailed, FakeRouter, TestEngine, WorkerProcess, eventually
from tests.core.test_preview_only import CONSOLE, turns
from tests.roots.test_worker_process import SEVEN

pytestmark = pytest.mark.slow  # three workers started per case

SEED = """\
summary_reuse: true
count_calibration: usage
session_store: state
lease_store: state
anchor_messages: 1
summary_check: append
"""
# The two models the router knows: the session's, and a smaller one the user may switch to.
BUDGETS = {
    "big-model": {"model": {"id": "big-model", "provider": "fake", "context_window": 12000,
                            "max_output_tokens": 1000}, "effective_max_output_tokens": 1000},
    "small-model": {"model": {"id": "small-model", "provider": "fake", "context_window": 6000,
                              "max_output_tokens": 500}, "effective_max_output_tokens": 500},
    "tiny-model": {"model": {"id": "tiny-model", "provider": "fake", "context_window": 1600,
                             "max_output_tokens": 100}, "effective_max_output_tokens": 100},
}
WRITES = {"state::set", "state::update", "state::delete"}


@pytest.fixture(params=[1, 2], ids=["one-process", "two-processes"])
def processes(request: pytest.FixtureRequest) -> int:
    return int(request.param)


class Run:
    """A fresh engine, router and worker: nothing one run keeps reaches another."""

    def __init__(self, tmp_path: Path, processes: int) -> None:
        self.router = FakeRouter(budgets=BUDGETS)
        self.engine = TestEngine(router=self.router).start()
        (tmp_path / "seed.yaml").write_text(SEED)
        extra = () if processes == 1 else ("--processes", str(processes))
        self.worker = WorkerProcess(self.engine.url, "--config", str(tmp_path / "seed.yaml"), *extra,
                                    env={"III_COMPOSE_DIR": str(tmp_path)}, cwd=tmp_path)
        try:
            self.engine.wait_for_functions(set(SEVEN), timeout=20)
            eventually(lambda: self.engine.bindings_of("configuration"))
        except (TimeoutError, AssertionError):
            raise AssertionError(self.worker.stderr) from None

    def assemble(self, payload: dict[str, Any]) -> str:
        """The answer as its canonical text (sorted keys, as the worker writes it), or the error."""
        try:
            return json.dumps(self.engine.call("context::assemble", payload, timeout=30), sort_keys=True)
        except CallFailed as failure:
            return f"error: {failure.code}: {failure.message}"

    def close(self) -> None:
        self.worker.kill()
        self.engine.stop()


@pytest.fixture
def start(tmp_path: Path, processes: int) -> Iterator[Callable[[str], Run]]:
    runs: list[Run] = []

    def start(name: str) -> Run:
        directory = tmp_path / name
        directory.mkdir()
        runs.append(Run(directory, processes))
        return runs[-1]

    yield start
    for run in runs:
        run.close()


def routed(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "model": {"id": "big-model", "provider": "fake"}}


def previews(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """Previews of a switch to the small model after ``turn``: the console's, of the window the
    harness keeps (the tail after the compaction, with its summary) and of a history that would
    need compacting; and, for a tiny model, one that names the session (its lease key) and leaves
    compaction allowed: as an ordinary call it would summarise the session's remembered window
    again for the tiny model, under the session's lease, and remember that summary for the
    session."""
    applied = json.loads(turn["answer"])["applied"]
    messages = turn["payload"]["messages"]
    model = {"id": "small-model", "provider": "fake"}
    return [
        {"messages": messages[applied["tail_start_index"]:], "model": model,
         "options": {"preview_only": True, **CONSOLE, "previous_summary": applied["summary"]}},
        {"messages": messages, "model": model, "options": {"preview_only": True, **CONSOLE}},
        {"messages": messages, "model": {"id": "tiny-model", "provider": "fake"},
         "options": {"preview_only": True, **turn["payload"]["options"], "tail_turns": 1}},
    ]


def as_control(preview: dict[str, Any]) -> dict[str, Any]:
    """The same request without the flag, with ``allow_compaction: false``."""
    options = {k: v for k, v in preview["options"].items() if k != "preview_only"}
    return {**preview, "options": {**options, "allow_compaction": False}}


def test_a_preview_between_two_turns_changes_nothing(start: Callable[[str], Run]) -> None:
    first, second = (routed(payload) for payload in turns())

    plain = start("plain")
    expected = [plain.assemble(first), plain.assemble(second)]
    one, two = (json.loads(text) for text in expected)
    assert one["applied"]["compacted"] is True and "retained_items" in one["applied"]
    assert two["applied"]["summary_reused"] is True and "calibration" in two["breakdown"]
    assert list(plain.engine.state.groups) == ["context_session"]

    previewed = start("previewed")
    assert previewed.assemble(first) == expected[0]
    stored, chats = json.dumps(previewed.engine.state.groups, sort_keys=True), len(previewed.router.chat_calls)
    previewed.engine.calls.clear()
    answers = [previewed.assemble(p) for p in previews({"payload": first, "answer": expected[0]})]
    assert json.dumps(previewed.engine.state.groups, sort_keys=True) == stored
    assert not [c for c in previewed.engine.calls if c[0] in WRITES or c[0] == "router::chat"]
    assert len(previewed.router.chat_calls) == chats
    assert previewed.assemble(second) == expected[1]

    fits = json.loads(answers[0])
    # The console sends the compaction's tail: the anchor the summary carries is put back first.
    assert (fits["token_count"], fits["usable"], fits["applied"]["compacted"]) == (1510, 4900, False)
    assert fits["applied"]["anchor_tokens"] == 22
    overflow = "error: invocation_failed: handler error: context/overflow: assembled context requires {} " \
               "tokens but usable budget is {}"
    assert answers[1:] == [overflow.format(9396, 4900), overflow.format(1366, 1340)]
    # The same requests with allow_compaction false, after the same first turn, answer the same bytes.
    control = start("control")
    assert control.assemble(first) == expected[0]
    assert [control.assemble(as_control(p)) for p in previews({"payload": first, "answer": expected[0]})] == answers

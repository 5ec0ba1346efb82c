"""bench.league: the peers' contexts and the league's counters, on a hand-made session and on one
generated session."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.kit.ledger import count
from bench.kit.peers import PEERS_BY_NAME, masking, masking_peer
from bench.league.__main__ import main
from bench.league.run import BUDGETS, run_peer
from bench.replay.replay import Session

TS = 1_764_460_800_000
LINES = "\n".join(f"line {i:04d} " + "x" * 30_000 for i in range(3))  # 3 lines, ~22.5k tokens


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": TS}


def _call(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "function_call", "id": f"c{n}", "function_id": "fs::read",
                                              "arguments": {"path": f"src/m{n}.py"}}],
            "stop_reason": "function_call", "model": "m", "provider": "p", "timestamp": TS + n}


def _result(n: int, text: str) -> dict[str, Any]:
    return {"role": "function_result", "function_call_id": f"c{n}", "function_id": "fs::read",
            "content": [{"type": "text", "text": text}], "details": None, "is_error": False,
            "timestamp": TS + n}


def _final() -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stop_reason": "end",
            "model": "m", "provider": "p", "timestamp": TS + 9}


# user, call 1, big result, call 2, big result, call 3, small result, final answer: 4 model calls.
MESSAGES = [_user("Fix src/m1.py"), _call(1), _result(1, LINES), _call(2), _result(2, LINES), _call(3),
            _result(3, "ok"), _final()]
SESSION = Session("hand-made", "You are a coding agent.", MESSAGES)
SYSTEM = "You are a coding agent."


def _masked(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "content": [{"type": "text", "text": "Old environment output: (3 lines omitted)"}]}


def test_raw_history_sends_everything_and_counts_the_calls_over_the_limit() -> None:
    ledger = run_peer(SESSION, BUDGETS["32k"], PEERS_BY_NAME["raw history"])
    sizes = [count(SYSTEM, MESSAGES[:end]) for end in (1, 3, 5, 7)]
    assert sizes[1] < 28_000 < sizes[2]  # the third call is over 32000 - 4000
    assert (ledger.calls, ledger.overflows, ledger.rewrites, ledger.summarizer_calls) == (4, 2, 0, 0)
    assert ledger.sent == sizes[0] + sizes[1]
    assert ledger.cached == sizes[0]  # the second call repeats the first from its start


def test_masking_keeps_the_last_m_results_and_replaces_the_older_ones() -> None:
    strategy = masking(1)(BUDGETS["32k"])
    assert strategy(SYSTEM, MESSAGES[:5]).messages == [*MESSAGES[:2], _masked(MESSAGES[2]), *MESSAGES[3:5]]
    assert strategy(SYSTEM, MESSAGES[:7]).messages == [
        *MESSAGES[:2], _masked(MESSAGES[2]), MESSAGES[3], _masked(MESSAGES[4]), *MESSAGES[5:7]]
    ledger = run_peer(SESSION, BUDGETS["32k"], PEERS_BY_NAME["masking M=10"])
    assert (ledger.calls, ledger.overflows) == (4, 2)  # M = 10 masks nothing here
    one = run_peer(SESSION, BUDGETS["32k"], masking_peer(1))
    sent = [count(SYSTEM, MESSAGES[:1]), count(SYSTEM, MESSAGES[:3]),
            count(SYSTEM, [*MESSAGES[:2], _masked(MESSAGES[2]), *MESSAGES[3:5]]),
            count(SYSTEM, [*MESSAGES[:2], _masked(MESSAGES[2]), MESSAGES[3], _masked(MESSAGES[4]),
                           *MESSAGES[5:7]])]
    # Every call is sent; the third and fourth each mask a result the previous call sent whole.
    assert (one.calls, one.overflows, one.rewrites) == (4, 0, 2)
    assert one.sent == sum(sent)
    assert one.cached == sent[0] + count(SYSTEM, MESSAGES[:2]) + count(SYSTEM, [*MESSAGES[:2], _masked(MESSAGES[2]),
                                                                                 MESSAGES[3]])


@pytest.mark.slow  # a few seconds: one generated session replayed four times
def test_quick_league_on_one_generated_session(capsys: Any) -> None:
    assert main(["--quick", "--json", "--strategies", "raw history,masking M=10,worker: defaults"]) == 0
    rows = {row["strategy"]: row for row in json.loads(capsys.readouterr().out)}
    assert list(rows) == ["raw history", "masking M=10", "worker: defaults"]
    raw, masked, worker = rows["raw history"], rows["masking M=10"], rows["worker: defaults"]
    # multi-cache-invalidation: 78 model calls; a 26k-token read makes raw history overflow from call 2.
    assert {r["calls"] for r in rows.values()} == {78}
    assert (raw["overflows"], raw["prefix_rewrites"], raw["tokens_sent"]) == (77, 0, 101)  # system prompt + task
    assert (masked["overflows"], masked["summariser_calls"]) == (19, 0)
    assert worker["overflows"] == 0 and worker["summariser_calls"] == 6
    assert raw["recall_total"] == masked["recall_total"] == worker["recall_total"] > 0
    assert raw["recall_found"] == 0  # raw history overflows on every pressure call


def test_the_summarisers_share_of_the_bill():
    from bench.kit.ledger import CACHED_READ, Ledger
    from bench.league.modes import WORKER_MODES_BY_NAME
    from bench.league.table import COLUMNS, Row, cells, summariser_share

    ledger = Ledger(sent=9000, cached=4000, summarizer_calls=2, summarizer_input=1000, summarizer_cached=200,
                    summarizer_output=100)
    # billed: 0.1 * 4200 + (10000 - 4200) + 100 = 6320 at CACHED_READ 0.1; the summariser's part
    # 0.1 * 200 + 800 + 100 = 920.
    assert CACHED_READ == 0.1
    assert ledger.billed_automatic == pytest.approx(6320)
    assert ledger.summarizer_billed_automatic == pytest.approx(920)
    assert summariser_share(ledger) == pytest.approx(920 / 6320)
    assert summariser_share(Ledger()) == 0.0
    row = Row("128k", "worker: recommended+history 32000", "worker", True, ledger)
    assert dict(zip(COLUMNS, cells(row)))["summariser share"] == "14.6%"
    assert row.as_json()["summariser_share"] == 0.1456
    assert WORKER_MODES_BY_NAME["worker: recommended+history 32000"].config == {
        "profile": "recommended", "max_history_tokens": 32000}


def _row(budget: str, strategy: str, kind: str, billed: float, found: int, overflows: int = 0) -> Any:
    from bench.kit.ledger import Ledger
    from bench.league.table import Row

    # billed_automatic of a ledger with nothing cached is its input: sent tokens
    return Row(budget, strategy, kind, False, Ledger(calls=10, sent=int(billed), overflows=overflows,
                                                       recall_found=found, recall_total=100))


def test_the_plot_draws_the_peers_the_default_and_the_two_profiles() -> None:
    from bench.league.selection import drawn

    names = ["raw history", "masking M=1", "masking M=10", "masking M=40", "Claude Code", "worker: defaults",
             "worker: check", "worker: recommended", "worker: recommended without summariser",
             "worker: recommended less check", "worker: recommended+history 32000",
             "worker: recommended+history 32000 without summariser"]
    for budget, history in (("32k", []), ("128k", names[-2:])):
        rows = [_row(budget, n, "worker" if n.startswith("worker") else "peer", 1000, 50,
                     overflows=1 if n in ("masking M=1", "masking M=10") else 0) for n in names]
        assert [r.strategy for r in drawn(rows)] == [
            "raw history", "masking M=10", "masking M=40", "Claude Code", "worker: defaults",
            "worker: recommended", "worker: recommended without summariser", *history]


def test_the_front_is_the_rows_with_0_overflows_no_other_beats_on_bill_and_recall() -> None:
    from bench.league.selection import front

    rows = [_row("32k", "a", "peer", 500, 10, overflows=3),  # cheapest, but overflowed
            _row("32k", "b", "peer", 800, 50), _row("32k", "c", "peer", 900, 40),  # c: b dominates
            _row("32k", "d", "worker", 900, 95), _row("32k", "e", "worker", 950, 97),
            _row("32k", "f", "peer", 2000, 80), _row("32k", "g", "peer", 950, 97)]  # g ties e
    assert [r.strategy for r in front(rows)] == ["b", "d", "e", "g"]


def test_the_128k_rows_are_scored_on_the_history_budgets_pressure_set() -> None:
    from bench.league.recall import PRESSURE_CEILING, pressure_ceiling
    from bench.league.selection import pressure_title

    assert PRESSURE_CEILING == {"128k": 32_000}
    assert (pressure_ceiling("128k"), pressure_ceiling("32k"), pressure_ceiling("32k", 32_000),
            pressure_ceiling("128k", 16_000)) == (32_000, None, 32_000, 16_000)
    rows = [_row("128k", "raw history", "peer", 1000, 50)]
    assert pressure_title("128k", rows) == ("128k window\nrecall over the calls whose raw history exceeds the "
                                            "history budget (32,000 tokens), 100 long-range needs")
    assert pressure_title("32k", rows).endswith("exceeds the default usable budget, 100 long-range needs")

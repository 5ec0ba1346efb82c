"""Drive recorded sessions through ``context::assemble`` the way the iii agent harness does.

The harness turn loop is the kit's (``bench.kit.loop.HarnessLoop``), over the worker's handlers
in this process (``bench.kit.loop.InProcess``), without a pre-generate hook and without the
harness's session id line in the system prompt.

    python -m bench.replay.harness [--realdata ../shared/realdata] [--window 32000]
                                   [--max-output 4000] [--config '{"count_calibration": "usage"}']

The harness keeps a session log: the recorded messages, appended one by one, and a compaction
entry each time an answer says ``applied.compacted`` (the summary and the log position of the
message at ``applied.tail_start_index``). Before each recorded assistant message (one model step)
it sends, from the latest compaction entry's tail onward, the model-facing messages of the log
(``custom`` entries are not sent), with:

* ``model``: ``{id, provider}`` of the session's first assistant message and no inline limits;
  a resolver standing in for the router answers every model with ``--window`` /
  ``--max-output``;
* the session's system prompt and tools;
* ``options``: ``lease_key`` = the session's name, ``request_overhead_tokens: 64``, and the
  latest entry's summary as ``previous_summary``.

The recorded assistant messages keep the ``usage`` their provider wrote: the prompt that usage
counts held the session's whole history up to it, as in a session that started before this
context manager ran. A turn fails when assemble answers ``context/overflow`` (the harness's
non-retryable turn failure), or when its ``token_count`` exceeds ``usable`` (the harness rejects
such an answer); the replay goes on with the next step, as the harness's next turn would. Any
other error stops the run (a dependency failure).

One worker per session: the deterministic replay summariser (``bench.kit.summariser``),
no lease store (one harness, one history), a fresh ledger of sent contexts and session store. Definitions: ``turns`` = model steps driven; ``failed`` = failed turns; ``overflow`` =
those answered ``context/overflow``; ``over usable`` = answers with ``token_count > usable``;
``compactions`` = answers reporting ``applied.compacted``; ``calibrated`` = answers counted on a
usage anchor (``breakdown.calibration``) and ``max ratio`` the largest ratio P / E among them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.kit.loop import HarnessLoop, InProcess
from bench.kit.sessions import load_session
from bench.kit.summariser import RecordingSummarizer
from context_manager.adapters.callable_summarizer import CallableSummarizer
from context_manager.adapters.memory_session_store import MemorySessionStore
from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.config.parse import parse_config_value
from context_manager.core.counting.calibration import SentLedger
from context_manager.handlers.context import HandlerContext
from context_manager.ports import ModelBudget, RouterModel

REQUEST_OVERHEAD_TOKENS = 64
DEFAULT_WINDOW = 32_000
DEFAULT_MAX_OUTPUT = 4_000
ASSEMBLE_FAILED = "context_overflow: context::assemble: "  # the loop's failure text for an overflow


@dataclass(frozen=True)
class FixedLimits:
    """A router stand-in: every model has the same window and output cap."""

    context_window: int
    max_output_tokens: int

    async def get_model_budget(self, provider: str | None, model_id: str) -> ModelBudget | None:
        model = RouterModel(model_id, self.context_window, self.max_output_tokens, provider or "")
        return ModelBudget(model, self.max_output_tokens)


@dataclass
class HarnessStats:
    session: str
    turns: int = 0
    overflows: int = 0
    over_usable: int = 0
    compactions: int = 0
    calibrated: int = 0
    max_ratio: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return self.overflows + self.over_usable


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("bench.replay.harness")
    log.setLevel(logging.CRITICAL)
    return log


def run_session(path: Path, config: dict[str, Any], window: int = DEFAULT_WINDOW,
                max_output: int = DEFAULT_MAX_OUTPUT) -> HarnessStats:
    """One recorded session (``system_prompt``, ``tools``, ``messages``) driven turn by turn."""
    session = load_session(path)
    ctx = HandlerContext(
        config=parse_config_value(config),
        resolver=FixedLimits(window, max_output),
        summarizer=CallableSummarizer(RecordingSummarizer()),
        lease_store=None,  # one harness per session: nothing to coordinate
        tokenizers=PACKAGED_TOKENIZERS,
        log=_quiet_logger(),
        memo=None,
        session_store=MemorySessionStore(),
        sent_ledger=SentLedger(),
    )
    stats = HarnessStats(session.name)

    def observe(answer: dict[str, Any]) -> None:
        anchor = answer["breakdown"].get("calibration")
        if anchor is not None:
            stats.calibrated += 1
            stats.max_ratio = max(stats.max_ratio, anchor["ratio"])

    loop = HarnessLoop(InProcess(ctx), session, session.name, hook=None,
                       request_overhead=REQUEST_OVERHEAD_TOKENS, session_line=False, observe=observe)
    run = loop.run()
    stats.turns = len(run.steps)
    stats.compactions = sum(a.compacted for step in run.steps for a in step.assemblies)
    for step in run.steps:
        if step.failure is None:
            continue
        stats.errors.append(step.failure)
        if step.failure.startswith(ASSEMBLE_FAILED):
            stats.overflows += 1
        else:
            stats.over_usable += 1
    return stats


def run(folder: Path, config: dict[str, Any], window: int = DEFAULT_WINDOW,
        max_output: int = DEFAULT_MAX_OUTPUT) -> list[HarnessStats]:
    return [run_session(path, config, window, max_output) for path in sorted(folder.glob("*.json"))]


def render(rows: list[HarnessStats], config: dict[str, Any], window: int, max_output: int) -> str:
    lines = [f"harness loop at {window}/{max_output}, config {orjson.dumps(config).decode()}",
             f"{'session':<32} {'turns':>5} {'failed':>6} {'overflow':>8} {'over usable':>11} {'compactions':>11} "
             f"{'calibrated':>10} {'max ratio':>9}"]
    for r in rows:
        lines.append(f"{r.session:<32} {r.turns:>5} {r.failed:>6} {r.overflows:>8} {r.over_usable:>11} "
                     f"{r.compactions:>11} {r.calibrated:>10} {r.max_ratio:>9.3f}")
    lines.append(f"{'all':<32} {sum(r.turns for r in rows):>5} {sum(r.failed for r in rows):>6} "
                 f"{sum(r.overflows for r in rows):>8} {sum(r.over_usable for r in rows):>11} "
                 f"{sum(r.compactions for r in rows):>11} {sum(r.calibrated for r in rows):>10} "
                 f"{max(r.max_ratio for r in rows):>9.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", default="../shared/realdata")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--max-output", type=int, default=DEFAULT_MAX_OUTPUT)
    parser.add_argument("--config", default='{"count_calibration": "usage"}',
                        help="the worker configuration, as JSON")
    args = parser.parse_args(argv)
    config = orjson.loads(args.config)
    rows = run(Path(args.realdata), config, args.window, args.max_output)
    print(render(rows, config, args.window, args.max_output))
    return 1 if any(r.failed for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The passes one assemble call runs, in order: one line per pass, with the condition under which
the configuration (and the call's options) include it. A new pass is a module under
``core.assembly.passes`` and one line here."""

from __future__ import annotations

from context_manager.core.assembly.passes import Pass
from context_manager.core.assembly.passes.cap import Cap, cap_threshold
from context_manager.core.assembly.passes.carried_anchor import CarriedAnchor
from context_manager.core.assembly.passes.compaction import Compaction
from context_manager.core.assembly.passes.drop_oldest import DropOldest
from context_manager.core.assembly.passes.emergency import Emergency
from context_manager.core.assembly.passes.prune import Prune
from context_manager.core.assembly.passes.retention import Retention
from context_manager.core.assembly.request import AssembleOptions
from context_manager.core.settings import WorkerConfig

# The passes keep no state of their own: one instance each serves every call.
CARRIED_ANCHOR, RETENTION, CAP, PRUNE = CarriedAnchor(), Retention(), Cap(), Prune()
COMPACTION, EMERGENCY, DROP_OLDEST = Compaction(), Emergency(), DropOldest()


def plan(config: WorkerConfig, options: AssembleOptions, anchor_requested: int) -> tuple[Pass, ...]:
    lines: tuple[tuple[Pass, bool], ...] = (
        (CARRIED_ANCHOR, bool(anchor_requested)),
        (RETENTION, config.retention is not None),
        (CAP, cap_threshold(options, config) != 0),
        (PRUNE, options.allow_prune is not False),
        (COMPACTION, options.allow_compaction is not False),
        (EMERGENCY, True),
        (DROP_OLDEST, config.overflow_fallback == "drop_oldest"),
    )
    return tuple(step for step, wanted in lines if wanted)


def pass_names(config: WorkerConfig, options: AssembleOptions, anchor_requested: int) -> list[str]:
    return [step.name for step in plan(config, options, anchor_requested)]

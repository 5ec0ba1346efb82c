"""The modes and budgets the recall benchmark replays (extend :data:`MODES` to add one)."""

from __future__ import annotations

import re

from bench.kit.modes import BUDGETS, MODES_BY_NAME, Mode

RETENTION = {"anchor_messages": 1, "summary_check": "append", "summarizer_fallback": "extractive",
             "reduce_to": 0.6, "overflow_fallback": "drop_oldest"}

# Every configuration of the replay's modes can be asked for by name too (``--modes``).
MODES: list[Mode] = [
    MODES_BY_NAME["summariser"],
    MODES_BY_NAME["summariser+check"],
    MODES_BY_NAME["none+extractive"],
    MODES_BY_NAME["none+drop_oldest"],
    # Every task-retention key at once: anchor, check, extractive fallback, reduce_to, drop_oldest.
    Mode("summariser+retention", True, RETENTION),
    Mode("none+retention", False, RETENTION),
    MODES_BY_NAME["none"],
    MODES_BY_NAME["summariser+anchor+check"],
    MODES_BY_NAME["summariser+reduce"],
    MODES_BY_NAME["none+drop_oldest+reduce"],
    # working_set: true beside the mode it extends.
    Mode("summariser+working_set", True, {"working_set": True}),
    Mode("summariser+check+working_set", True, {"summary_check": "append", "working_set": True}),
    Mode("none+extractive+working_set", False, {"summarizer_fallback": "extractive", "working_set": True}),
    Mode("none+drop_oldest+working_set", False, {"overflow_fallback": "drop_oldest", "working_set": True}),
    Mode("none+drop_oldest+reduce+working_set", False, {"overflow_fallback": "drop_oldest",
                                                        "reduce_to": 0.6, "working_set": True}),
    Mode("summariser+retention+working_set", True, {"anchor_messages": 1, "summary_check": "append",
                                                    "summarizer_fallback": "extractive",
                                                    "reduce_to": 0.6,
                                                    "overflow_fallback": "drop_oldest",
                                                    "working_set": True}),
]
QUICK_MODES = ("summariser", "none+drop_oldest")

DEFAULT_BUDGETS = ("16k/2k", "32k/4k")
_PAIR = re.compile(r"^(\d+k)/(\d+)k$")


def mode(name: str) -> Mode | None:
    """A mode of :data:`MODES`, else of the replay's, else ``None``."""
    for candidate in MODES:
        if candidate.name == name:
            return candidate
    return MODES_BY_NAME.get(name)


def budget(name: str) -> tuple[str, int] | None:
    """``WINDOW/OUTPUT`` (``16k/2k``: a window of the replay's budgets, output in thousands)."""
    match = _PAIR.match(name)
    if match is None or match.group(1) not in BUDGETS:
        return None
    return match.group(1), int(match.group(2)) * 1000

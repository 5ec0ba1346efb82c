"""Function id -> handler. The engine client and `api.call` both dispatch through this table."""

from __future__ import annotations

import importlib
from typing import Any, Awaitable, Callable

from context_manager.handlers.context import HandlerContext

Handler = Callable[[Any, HandlerContext], Awaitable[dict[str, Any]]]

# (function id, module, attribute) in registration order (spec 04 §1.5).
_TABLE = (
    ("context::count-tokens", "context_manager.handlers.count_tokens", "handle"),
    ("context::prune", "context_manager.handlers.prune", "handle"),
    ("context::assemble", "context_manager.handlers.assemble", "handle"),
    ("context::compact", "context_manager.handlers.compact", "handle"),
    ("context::on-models-changed", "context_manager.handlers.internal", "handle_on_models_changed"),
    ("context::on-config-change", "context_manager.handlers.internal", "handle_on_config_change"),
    ("context-manager::ui-content", "context_manager.handlers.internal", "handle_ui_content"),
)


def _load() -> dict[str, Handler]:
    table: dict[str, Handler] = {}
    for function_id, module_name, attribute in _TABLE:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        handler = getattr(module, attribute, None)
        if handler is not None:
            table[function_id] = handler
    return table


FUNCTIONS: dict[str, Handler] = _load()

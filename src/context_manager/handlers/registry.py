"""Function id -> handler. The engine client and `api.call` both dispatch through this table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from context_manager.handlers import assemble, compact, count_tokens, internal, prune
from context_manager.handlers.context import HandlerContext

Handler = Callable[[Any, HandlerContext], Awaitable[dict[str, Any]]]

# In registration order (spec 04 §1.5).
FUNCTIONS: dict[str, Handler] = {
    "context::count-tokens": count_tokens.handle,
    "context::prune": prune.handle,
    "context::assemble": assemble.handle,
    "context::compact": compact.handle,
    "context::on-models-changed": internal.handle_on_models_changed,
    "context::on-config-change": internal.handle_on_config_change,
    "context-manager::ui-content": internal.handle_ui_content,
}

"""Function id -> handler. The engine client and `api.call` both dispatch through this table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from context_manager.handlers import assemble, compact, count_tokens, internal, policy, prune
from context_manager.handlers.context import HandlerContext
from context_manager.handlers.policy_scope import scoped

Handler = Callable[[Any, HandlerContext], Awaitable[dict[str, Any]]]

# In registration order (spec 04 §1.5); the context functions take `options.namespace`.
FUNCTIONS: dict[str, Handler] = {
    "context::count-tokens": scoped(count_tokens.handle),
    "context::prune": scoped(prune.handle),
    "context::assemble": scoped(assemble.handle, report=True),
    "context::compact": scoped(compact.handle),
    "context::on-models-changed": internal.handle_on_models_changed,
    "context::on-config-change": internal.handle_on_config_change,
    "context-manager::ui-content": internal.handle_ui_content,
    "context::policy::publish": policy.publish,
    "context::policy::list": policy.list_versions,
    "context::policy::activate": policy.activate,
    "context::policy::withdraw": policy.withdraw,
    "context::policy::resolve": policy.resolve,
    "context::policy::scopes": policy.scopes,
}

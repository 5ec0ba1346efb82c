"""The three internal functions: ``context::on-models-changed``, ``context::on-config-change``
and ``context-manager::ui-content`` (spec 01 §8.4, 04 §2.10, §4.2, §6.5).

Payloads are decoded strictly (a malformed one fails and has no effect) but their content is
advisory: the models-changed flush empties the whole cache whatever the provider, and a config
change always re-reads the stored value instead of trusting the event.
"""

from __future__ import annotations

import inspect
from typing import Any

from context_manager.handlers.context import HandlerContext
from context_manager.ui.content import ui_content
from context_manager.wire import decode as t

_MODELS_CHANGED = {"provider": t.FieldSpec(t.string)}
_CONFIG_CHANGE = {"id": t.FieldSpec(t.string)}
_UI_CONTENT = {"path": t.FieldSpec(t.string, required=True)}

_OK = {"ok": True}


async def handle_on_models_changed(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """Flush every cached model budget; ``{"ok": true}``."""
    t.decode_struct(payload, "OnModelsChangedEvent", _MODELS_CHANGED)
    if ctx.model_cache is not None:
        ctx.model_cache.flush()
    return dict(_OK)


async def handle_on_config_change(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """Run the reload hook; the answer is ``{"ok": true}`` even when the reload failed.

    The hook (``ctx.on_config_change``, sync or async, no arguments) fetches and applies the
    stored value itself and logs its own failures; anything it lets escape is logged here.
    """
    t.decode_struct(payload, "OnConfigChangeEvent", _CONFIG_CHANGE)
    hook = ctx.on_config_change
    if hook is not None:
        try:
            outcome = hook()
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            ctx.log.exception("configuration reload failed; the previous configuration stays in force")
    return dict(_OK)


async def handle_ui_content(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    """The console asset for ``path``; an unknown path is ``UNKNOWN_UI_ASSET``."""
    request = t.decode_struct(payload, "UiContentInput", _UI_CONTENT)
    return ui_content(request["path"])

"""``options.namespace`` on the four context functions: the call is served with the worker's
configuration and the policies that win for its namespace and model (``model.id``) applied.

A call without a namespace resolves at the org-global level. With no policy active anywhere and
no namespace the handler runs exactly as without this layer, so its answer is unchanged;
otherwise ``context::assemble`` reports ``applied.policy`` (the sources and warnings it used).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from context_manager.core.policies.namespace import check_namespace
from context_manager.handlers.context import HandlerContext

Handler = Callable[[Any, HandlerContext], Awaitable[dict[str, Any]]]

def requested_namespace(payload: Any) -> str | None:
    """``options.namespace`` of a request, checked; None when absent or null (and when the
    payload or its options are not objects: the handler reports those)."""
    if type(payload) is not dict:
        return None
    options = payload.get("options")
    if type(options) is not dict:
        return None
    return check_namespace(options.get("namespace"), "options.namespace")


def requested_model(payload: dict[str, Any]) -> str | None:
    model = payload.get("model")
    if type(model) is dict and type(model.get("id")) is str:
        return model["id"]
    return None


def scoped(handler: Handler, report: bool = False) -> Handler:
    """``handler`` served with the policies of the request's namespace and model; ``report``
    adds ``applied.policy`` to the answer (``context::assemble``)."""

    async def serve(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
        namespace = requested_namespace(payload)
        room = ctx.policies
        if room is None:
            if namespace is None:
                return await handler(payload, ctx)
            answer = await handler(payload, ctx)
            if report:
                _report(answer, {"sources": {s: {"kind": "worker_config"} for s in ("budget", "retention", "settings")},
                                 "warnings": []})
            return answer
        index = await room.index()
        if namespace is None and not index.active:
            return await handler(payload, ctx)
        resolution = await room.resolve(namespace, requested_model(payload), ctx.config, index)
        if not resolution.applied and namespace is None:
            return await handler(payload, ctx)
        served = replace(ctx, config=resolution.config)
        if not resolution.use_summarizer:
            served.summarizer = None
        answer = await handler(payload, served)
        if report:
            _report(answer, resolution.report())
        return answer

    return serve


def _report(answer: dict[str, Any], policy: dict[str, Any]) -> None:
    applied = answer.get("applied")
    if type(applied) is dict:
        applied["policy"] = policy

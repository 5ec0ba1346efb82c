"""``context::policy::*``: publish, list, activate and withdraw versions of the ``budget``,
``retention`` and ``settings`` policies, list the scopes that have versions, and resolve what a
namespace and model are served with (docs/policies.md).

With ``policy_write_token`` set, publish, activate and withdraw require ``token`` equal to it,
compared in constant time; a wrong or missing one is ``context/unauthorized`` and nothing changes.
The token is never echoed, logged or traced.
"""

from __future__ import annotations

import hmac
from typing import Any

from context_manager.core.policies.namespace import check_namespace, invalid
from context_manager.core.policies.room import PolicyRoom, check_model_id, check_surface
from context_manager.core.policies.scopes import Scope
from context_manager.handlers.context import HandlerContext
from context_manager.wire.decode import unexpected
from context_manager.wire.errors import HandlerError

UNAUTHORIZED = "context/unauthorized"
NO_STORE = "context/policy_store"

_MEMBERS = {
    "context::policy::publish": ("document", "model_id", "namespace", "surface", "token"),
    "context::policy::list": ("model_id", "namespace", "surface"),
    "context::policy::activate": ("id", "token"),
    "context::policy::withdraw": ("model_id", "namespace", "surface", "token"),
    "context::policy::resolve": ("model_id", "namespace"),
    "context::policy::scopes": (),
}


def _request(payload: Any, function_id: str) -> dict[str, Any]:
    if type(payload) is not dict:
        raise invalid("request", f"expected an object, got {unexpected(payload)}")
    allowed = _MEMBERS[function_id]
    for key in sorted(payload):
        if key not in allowed:
            expected = ", ".join(f"`{k}`" for k in allowed)
            raise invalid("request", f"unknown member `{key}`, expected "
                                     + (f"one of {expected}" if allowed else "none"))
    return payload


def _room(ctx: HandlerContext) -> PolicyRoom:
    if ctx.policies is None:
        raise HandlerError(NO_STORE, "this process has no policy store")
    return ctx.policies


def _authorize(request: dict[str, Any], ctx: HandlerContext) -> None:
    expected = ctx.config.policy_write_token
    if expected is None:
        return
    given = request.get("token")
    if type(given) is not str or not hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                                         expected.encode("utf-8", "surrogatepass")):
        raise HandlerError(UNAUTHORIZED, "a valid token is required to change policies")


def _scope(request: dict[str, Any]) -> Scope:
    surface = check_surface(request.get("surface"))
    return Scope(surface, check_namespace(request.get("namespace"), "namespace"),
                 check_model_id(request.get("model_id"), surface))


async def publish(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = _request(payload, "context::policy::publish")
    _authorize(request, ctx)
    scope = _scope(request)
    room = _room(ctx)
    if "document" not in request:
        raise invalid("request", "missing member `document`")
    document = room.check_document(scope.surface, request["document"])
    return await room.publish(scope, document, ctx.clock.now_ms())


async def list_versions(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = _request(payload, "context::policy::list")
    scope = _scope(request)
    return await _room(ctx).versions(scope)


async def scopes(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    _request(payload, "context::policy::scopes")
    return await _room(ctx).scopes()


async def activate(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = _request(payload, "context::policy::activate")
    _authorize(request, ctx)
    if "id" not in request:
        raise invalid("request", "missing member `id`")
    return await _room(ctx).activate(request["id"])


async def withdraw(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = _request(payload, "context::policy::withdraw")
    _authorize(request, ctx)
    scope = _scope(request)
    return await _room(ctx).withdraw(scope)


async def resolve(payload: Any, ctx: HandlerContext) -> dict[str, Any]:
    request = _request(payload, "context::policy::resolve")
    namespace = check_namespace(request.get("namespace"), "namespace")
    model_id = request.get("model_id")
    if model_id is not None:
        model_id = check_model_id(model_id, "budget")
    room = _room(ctx)
    resolution = await room.resolve(namespace, model_id, ctx.config)
    config = resolution.config.to_dict()
    del config["policy_write_token"]
    report = resolution.report()
    return {"namespace": namespace, "model_id": model_id, "config": config,
            "sources": report["sources"], "warnings": report["warnings"]}

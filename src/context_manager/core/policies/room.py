"""Published policies as one process serves them: publishing, listing, activating and withdrawing
versions through a :class:`~context_manager.ports.PolicyStore`, and resolving a request's
effective configuration, cached until the store's stamp changes.

Every call reads the store's index once (one ``state::get`` with the state store): a version
activated or withdrawn in any process is in force for the next call in every process. What is
resolved from an index is cached by namespace and model, so a warm call costs that read and a
lookup. When the index cannot be read the last one this process read is used (none: the worker's
configuration); only a call that needs a version this process has not read yet fails with the
store (versions never change, so each is read once).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from typing import Any, Protocol

from context_manager.core.policies.budget import budget_keys, check_budget
from context_manager.core.policies.namespace import check_namespace, invalid
from context_manager.core.policies.resolve import Selection, select
from context_manager.core.policies.scopes import (
    SURFACES,
    TAGGED_SURFACES,
    Scope,
    parse_scope_key,
    parse_version_id,
)
from context_manager.core.retention_policy import RetentionPolicy
from context_manager.core.settings import WorkerConfig
from context_manager.ports import EMPTY_POLICY_INDEX, PolicyIndex, PolicyRecord, PolicyStore, PolicyStoreError
from context_manager.wire.decode import unexpected
from context_manager.wire.errors import HandlerError

NOT_FOUND = "context/not_found"
STORE_FAILED = "context/policy_store"
# Resolutions kept per process; past this the cache starts over.
CACHE_LIMIT = 4096
MAX_MODEL_ID = 1024


class SettingsCodec(Protocol):
    """How ``settings`` and ``retention`` documents are checked and applied: the configuration
    parser's decoders, injected so this package stays pure."""

    def check_settings(self, document: Any, path: str) -> None:
        """Raise ``context/invalid_request`` naming the path of the first fault."""
        ...

    def check_retention(self, document: Any, path: str) -> RetentionPolicy: ...

    def apply_settings(self, config: WorkerConfig, document: dict[str, Any]) -> WorkerConfig: ...


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a request is served with: the effective configuration, whether a summariser may be
    used (a ``drop_oldest`` budget says no), and the selection it came from."""

    config: WorkerConfig
    use_summarizer: bool
    selection: Selection

    @property
    def applied(self) -> bool:
        return self.selection.applied

    def report(self) -> dict[str, Any]:
        """``applied.policy``: where each surface came from, and the warnings."""
        return {"sources": self.selection.sources(), "warnings": [dict(w) for w in self.selection.warnings]}


def _iso(now_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(now_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_surface(value: Any, path: str = "surface") -> str:
    if type(value) is not str or value not in SURFACES:
        raise invalid(path, f"expected \"budget\", \"retention\" or \"settings\", got {unexpected(value)}")
    return value


def check_model_id(value: Any, surface: str, path: str = "model_id") -> str | None:
    if value is None:
        return None
    if type(value) is not str or not value or len(value) > MAX_MODEL_ID:
        raise invalid(path, f"expected a model id (1 to {MAX_MODEL_ID} characters), got {unexpected(value)}")
    if surface not in TAGGED_SURFACES:
        raise invalid(path, f"the {surface} surface is not tagged by model")
    return value


def _failed(exc: PolicyStoreError) -> HandlerError:
    return HandlerError(STORE_FAILED, f"policy store failed, nothing changed: {exc}")


class PolicyRoom:
    def __init__(self, store: PolicyStore, codec: SettingsCodec) -> None:
        self.store = store
        self.codec = codec
        self._index: PolicyIndex = EMPTY_POLICY_INDEX
        self._documents: dict[tuple[str, int], Any] = {}
        self._resolved: dict[tuple[str | None, str | None], tuple[int, WorkerConfig, Resolution]] = {}

    # --- writing ---------------------------------------------------------------------------

    def check_document(self, surface: str, document: Any, path: str = "document") -> Any:
        if surface == "budget":
            check_budget(document, path)
        elif surface == "retention":
            if document is None:
                raise invalid(path, "expected an object, got null")
            self.codec.check_retention(document, path)
        else:
            if type(document) is not dict:
                raise invalid(path, f"expected an object, got {unexpected(document)}")
            self.codec.check_settings(document, path)
        return document

    async def publish(self, scope: Scope, document: Any, now_ms: int) -> dict[str, Any]:
        """A new version of ``scope`` holding ``document`` (already checked), made active."""
        try:
            version = await self.store.allocate(scope.key)
            created_at = _iso(now_ms)
            await self.store.put(scope.key, PolicyRecord(version, created_at, document))
            await self.store.activate(scope.key, version)
        except PolicyStoreError as exc:
            raise _failed(exc) from None
        return self._answer(scope, version, created_at, True)

    async def activate(self, version_id: Any) -> dict[str, Any]:
        if type(version_id) is not str:
            raise invalid("id", f"expected a version id, got {unexpected(version_id)}")
        parsed = parse_version_id(version_id)
        if parsed is None:
            raise HandlerError(NOT_FOUND, f"no policy version {version_id!r}")
        scope, version = parsed
        try:
            record = await self.store.get(scope.key, version)
            if record is None:
                raise HandlerError(NOT_FOUND, f"no policy version {version_id!r}")
            await self.store.activate(scope.key, version)
        except PolicyStoreError as exc:
            raise _failed(exc) from None
        return self._answer(scope, version, record.created_at, True)

    async def withdraw(self, scope: Scope) -> dict[str, Any]:
        try:
            active = (await self.store.index()).active.get(scope.key)
            if active is not None:
                await self.store.activate(scope.key, None)
        except PolicyStoreError as exc:
            raise _failed(exc) from None
        return {"surface": scope.surface, "namespace": scope.namespace, "model_id": scope.model_id,
                "withdrawn": None if active is None else scope.version_id(active)}

    def _answer(self, scope: Scope, version: int, created_at: str, active: bool) -> dict[str, Any]:
        return {"id": scope.version_id(version), "surface": scope.surface, "namespace": scope.namespace,
                "model_id": scope.model_id, "version": version, "is_active": active, "created_at": created_at}

    # --- reading ---------------------------------------------------------------------------

    async def versions(self, scope: Scope) -> dict[str, Any]:
        try:
            records = await self.store.versions(scope.key)
            active = (await self.store.index()).active.get(scope.key)
        except PolicyStoreError as exc:
            raise HandlerError(STORE_FAILED, f"policy store failed: {exc}") from None
        records.sort(key=lambda record: record.version, reverse=True)
        return {"versions": [{"id": scope.version_id(r.version), "version": r.version,
                              "is_active": r.version == active, "created_at": r.created_at,
                              "document": r.document} for r in records]}

    async def scopes(self) -> dict[str, Any]:
        """Every scope a version was published to (``context::policy::scopes``): the namespaces
        with a policy, and per scope its last version number and the active one (``null``:
        withdrawn), ordered by namespace (org-global first), surface and model tag."""
        try:
            taken = await self.store.scopes()
            active = (await self.store.index()).active
        except PolicyStoreError as exc:
            raise HandlerError(STORE_FAILED, f"policy store failed: {exc}") from None
        found = [(scope, key) for key in taken if (scope := parse_scope_key(key)) is not None]
        found.sort(key=lambda pair: (pair[0].namespace or "", pair[0].surface, pair[0].model_id or ""))
        namespaces = sorted({scope.namespace for scope, _ in found if scope.namespace is not None})
        return {"namespaces": namespaces,
                "scopes": [{"surface": scope.surface, "namespace": scope.namespace, "model_id": scope.model_id,
                            "latest_version": taken[key], "active_version": active.get(key)}
                           for scope, key in found]}

    async def index(self) -> PolicyIndex:
        """The store's index, or the last one read when the store fails."""
        try:
            self._index = await self.store.index()
        except PolicyStoreError:
            pass
        return self._index

    async def resolve(self, namespace: str | None, model_id: str | None, config: WorkerConfig,
                      index: PolicyIndex | None = None) -> Resolution:
        """What a request at ``namespace`` for ``model_id`` is served with, from ``index`` (by
        default the store's, read now)."""
        if index is None:
            index = await self.index()
        key = (namespace, model_id)
        cached = self._resolved.get(key)
        if cached is not None and cached[0] == index.stamp and (cached[1] is config or cached[1] == config):
            return cached[2]
        selection = select(namespace, model_id, index.active)
        resolution = await self._apply(selection, config)
        if len(self._resolved) >= CACHE_LIMIT:
            self._resolved.clear()
        self._resolved[key] = (index.stamp, config, resolution)
        return resolution

    async def _document(self, scope: Scope, version: int) -> Any:
        key = (scope.key, version)
        if key not in self._documents:
            try:
                record = await self.store.get(scope.key, version)
            except PolicyStoreError as exc:
                raise HandlerError(STORE_FAILED, f"policy store failed: {exc}") from None
            if record is None:
                raise HandlerError(STORE_FAILED, f"policy version {scope.version_id(version)} is missing")
            if scope.surface == "retention":
                self._documents[key] = self.codec.check_retention(record.document, "document")
            elif scope.surface == "budget":
                self._documents[key] = check_budget(record.document)
            else:
                self._documents[key] = record.document
        return self._documents[key]

    async def _apply(self, selection: Selection, config: WorkerConfig) -> Resolution:
        """The worker's configuration with the winning documents over it: settings, then the
        retention policy, then the budget (which beats settings on the keys both set)."""
        use_summarizer = True
        winners = selection.winners
        settings = winners.get("settings")
        if settings is not None:
            config = self.codec.apply_settings(config, await self._document(settings.scope, settings.version))
        retention = winners.get("retention")
        if retention is not None:
            config = replace(config, retention=await self._document(retention.scope, retention.version))
        budget = winners.get("budget")
        if budget is not None:
            document = await self._document(budget.scope, budget.version)
            config = replace(config, **budget_keys(document))
            use_summarizer = document.history_mode != "drop_oldest"
        return Resolution(config, use_summarizer, selection)


def scope_from(payload: dict[str, Any], surface: str) -> Scope:
    return Scope(surface, check_namespace(payload.get("namespace"), "namespace"),
                 check_model_id(payload.get("model_id"), surface))



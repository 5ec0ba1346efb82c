"""Resolution: which published document of each surface a request at a namespace, for a model,
is served with, and what that says out loud.

Per surface the levels are the namespace, each ancestor, then the org-global level; then the
worker's configuration. At a level, the version tagged with the request's model beats the
untagged one (``budget`` and ``settings``: ``retention`` is never tagged); a level with neither
(only versions tagged for other models, or nothing active) does not apply. The first level that
applies wins whole: nothing of a farther level is merged in.

Warnings, in the hosted service's shapes:

- ``context_budget_resolved_at`` when the budget did not come from the plainest place: an
  ancestor (or the org-global level under a namespace) supplied it, or a model tag won;
- ``retention_policy_overridden`` when a nearer level's retention policy hides a farther one,
  naming both levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_manager.core.policies.namespace import levels
from context_manager.core.policies.scopes import SURFACES, TAGGED_SURFACES, Scope


@dataclass(frozen=True, slots=True)
class Winner:
    scope: Scope
    version: int

    def source(self) -> dict[str, Any]:
        return {"kind": "policy", "id": self.scope.version_id(self.version), "namespace": self.scope.namespace,
                "tagged_model": self.scope.model_id, "version": self.version}


WORKER_CONFIG_SOURCE: dict[str, Any] = {"kind": "worker_config"}


@dataclass(frozen=True, slots=True)
class Selection:
    """The winner of each surface (``None``: the worker's configuration) and the warnings."""

    winners: dict[str, Winner | None]
    warnings: tuple[dict[str, Any], ...]

    @property
    def applied(self) -> bool:
        return any(winner is not None for winner in self.winners.values())

    def sources(self) -> dict[str, dict[str, Any]]:
        return {surface: (dict(WORKER_CONFIG_SOURCE) if winner is None else winner.source())
                for surface, winner in self.winners.items()}


def _at_level(surface: str, level: str | None, model_id: str | None, active: dict[str, int]) -> Winner | None:
    if model_id is not None and surface in TAGGED_SURFACES:
        tagged = Scope(surface, level, model_id)
        if tagged.key in active:
            return Winner(tagged, active[tagged.key])
    untagged = Scope(surface, level, None)
    if untagged.key in active:
        return Winner(untagged, active[untagged.key])
    return None


def select(namespace: str | None, model_id: str | None, active: dict[str, int]) -> Selection:
    """The selection for a request at ``namespace`` (``None``: org-global) for ``model_id``,
    given the active version of every scope that has one (by scope key)."""
    chain = levels(namespace)
    winners: dict[str, Winner | None] = {}
    warnings: list[dict[str, Any]] = []
    for surface in SURFACES:
        depth, found = next(((depth, winner) for depth, level in enumerate(chain)
                             if (winner := _at_level(surface, level, model_id, active)) is not None), (0, None))
        winners[surface] = found
        if found is None:
            continue
        if surface == "budget" and (depth > 0 or found.scope.model_id is not None):
            warnings.append({"code": "context_budget_resolved_at", "namespace": found.scope.namespace,
                             "tagged_model": found.scope.model_id})
        if surface == "retention":
            displaced = next((level for level in chain[depth + 1:]
                              if _at_level(surface, level, None, active) is not None), False)
            if displaced is not False:
                warnings.append({"code": "retention_policy_overridden", "displaced": displaced,
                                 "namespace": found.scope.namespace})
    return Selection(winners, tuple(warnings))

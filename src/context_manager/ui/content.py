"""The console UI content function (spec 04 §4.1, §4.2): asset path -> source and content type.

The two assets ship as package data and are read into memory once, so the console (which gives
the function a few seconds per attempt) is always answered from memory.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import NamedTuple

from context_manager.wire.errors import HandlerError

SCRIPT_PATH = "context-manager/page.js"
STYLE_PATH = "context-manager/styles.css"
UNKNOWN_UI_ASSET = "UNKNOWN_UI_ASSET"
# Console limit on one asset.
MAX_ASSET_BYTES = 8 * 1024 * 1024


class Asset(NamedTuple):
    file_name: str
    content_type: str
    trigger_type: str


ASSETS: dict[str, Asset] = {
    SCRIPT_PATH: Asset("page.js", "text/javascript; charset=utf-8", "console:script"),
    STYLE_PATH: Asset("styles.css", "text/css; charset=utf-8", "console:style"),
}

# The bindings the worker makes for its assets, in registration order: (trigger type, config).
UI_TRIGGERS: tuple[tuple[str, dict[str, str]], ...] = tuple(
    (asset.trigger_type, {"path": path}) for path, asset in ASSETS.items()
)


@cache
def _source(file_name: str) -> str:
    return resources.files(__package__).joinpath(file_name).read_text(encoding="utf-8")


def unknown_asset(path: str) -> HandlerError:
    known = ", ".join(sorted(ASSETS))
    return HandlerError(
        UNKNOWN_UI_ASSET,
        f"'{path}' is not one of this worker's ui assets (expected one of: {known})",
    )


def ui_content(path: str) -> dict[str, str]:
    """``{"content", "content_type"}`` for a known asset path; ``UNKNOWN_UI_ASSET`` otherwise."""
    asset = ASSETS.get(path)
    if asset is None:
        raise unknown_asset(path)
    return {"content": _source(asset.file_name), "content_type": asset.content_type}


def preload() -> None:
    """Read every asset now (worker start), so later calls never touch the disk."""
    for asset in ASSETS.values():
        _source(asset.file_name)

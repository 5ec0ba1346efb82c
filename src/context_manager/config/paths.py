"""Resolution of the configured ``lease_dir`` into a directory path (spec 04 §2.3).

Absolute paths stay as they are; a leading ``~`` component means the home directory; everything
else is taken relative to ``III_COMPOSE_DIR`` (the Compose project), else the current directory.
The configured string itself is never rewritten: only the path handed to the lease store is.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping


def _non_empty(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value if value else None


def home_dir(environ: Mapping[str, str]) -> str | None:
    return _non_empty(environ, "HOME") or _non_empty(environ, "USERPROFILE")


def _components(path: str) -> list[str]:
    """Path components without empty parts and without ``.`` (``..`` is kept as is)."""
    return [part for part in path.split("/") if part not in ("", ".")]


def _current_dir() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def resolve_lease_dir(
    configured: str,
    environ: Mapping[str, str] | None = None,
    cwd: Callable[[], str | None] = _current_dir,
) -> str:
    """The directory the lease store opens for a configured ``lease_dir`` string."""
    env = os.environ if environ is None else environ
    if posixpath.isabs(configured):
        return configured

    parts = _components(configured)
    home = home_dir(env)
    starts_with_tilde = configured.split("/", 1)[0] == "~"
    if starts_with_tilde and parts == ["~"]:
        # Without a home, a bare "~" stays the relative path "~", not joined to any root.
        return home if home else "~"
    if starts_with_tilde and home:
        return posixpath.join(home, *parts[1:])

    root = _non_empty(env, "III_COMPOSE_DIR") or cwd()
    if root is None:
        return "/".join(parts)
    return posixpath.join(root, *parts) if parts else root

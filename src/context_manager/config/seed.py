"""The ``--config`` seed file (spec 04 §2.9): env expansion, then YAML, then strict parsing.

The seed only matters when nothing is stored in the configuration worker yet. Any failure is a
warning and means "no seed"; it never stops the worker.

Scalars follow YAML 1.2 (the original's dialect), not PyYAML's YAML 1.1: ``yes``/``on`` are
strings, ``20_000`` and ``010`` are strings, so they fail for boolean and integer keys.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from context_manager.config.parse import STRING_KEYS, ConfigError, parse_config_items
from context_manager.core.settings import WorkerConfig
from context_manager.wire.decode import unexpected

PREFIX = "yaml parse"

_log = logging.getLogger(__name__)


# --- ${NAME} expansion -----------------------------------------------------------------------


def expand_env(text: str, environ: Mapping[str, str] | None = None,
               log: logging.Logger | None = None) -> str:
    """Replace every ``${NAME}`` by the variable's value.

    The whole text between ``${`` and the next ``}`` is the name (there is no default syntax);
    an undefined name expands to nothing with a warning; an unterminated ``${`` stays literal;
    the output is not scanned again.
    """
    env = os.environ if environ is None else environ
    logger = log or _log
    out: list[str] = []
    rest = text
    while (start := rest.find("${")) != -1:
        out.append(rest[:start])
        after = rest[start + 2:]
        end = after.find("}")
        if end == -1:
            out.append("${")
            rest = after
            continue
        name = after[:end]
        value = env.get(name)
        if value is None:
            logger.warning("config seed references undefined environment variable %s", name)
        else:
            out.append(value)
        rest = after[end + 1:]
    out.append(rest)
    return "".join(out)


# --- a YAML 1.2 core-schema loader ------------------------------------------------------------

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
# A leading zero followed by more digits is not a number; no digit separators.
_INT = re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+|0o[0-7]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)

_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema plain-scalar resolution."""


Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    (_BOOL_TAG, _BOOL, "tTfF"),
    (_INT_TAG, _INT, "-+0123456789"),
    (_FLOAT_TAG, _FLOAT, "-+.0123456789"),
    (_NULL_TAG, _NULL, ["~", "n", "N", ""]),
):
    Yaml12Loader.add_implicit_resolver(_tag, _pattern, list(_first))


def _construct_int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text.startswith(("0x", "0o")):
        return int(text, 0)
    return int(text, 10)


def _construct_float(loader: yaml.SafeLoader, node: ScalarNode) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return float(text)


def _construct_bool(loader: yaml.SafeLoader, node: ScalarNode) -> bool:
    return loader.construct_scalar(node).lower() == "true"


Yaml12Loader.add_constructor(_INT_TAG, _construct_int)
Yaml12Loader.add_constructor(_FLOAT_TAG, _construct_float)
Yaml12Loader.add_constructor(_BOOL_TAG, _construct_bool)


def _member_value(loader: Yaml12Loader, key: Any, node: Node) -> Any:
    """The value of one top-level member.

    For string keys any non-null plain scalar is taken as its text (``lease_dir: 123`` is the
    directory "123"), as the original's YAML reader does.
    """
    if key in STRING_KEYS and isinstance(node, ScalarNode) and node.tag != _NULL_TAG:
        return node.value
    return loader.construct_object(node, deep=True)


def parse_seed_yaml(text: str) -> WorkerConfig:
    """Parse already-expanded YAML text; raises ConfigError with the ``yaml parse`` prefix."""
    loader = Yaml12Loader(text)
    try:
        root = loader.get_single_node()
        if not isinstance(root, MappingNode):
            value = None if root is None else loader.construct_object(root, deep=True)
            raise ConfigError(PREFIX, f"invalid type: {unexpected(value)}, expected struct WorkerConfig")
        items = []
        for key_node, value_node in root.value:
            key = loader.construct_object(key_node, deep=True)
            items.append((key, _member_value(loader, key, value_node)))
    except yaml.YAMLError as exc:
        raise ConfigError(PREFIX, " ".join(str(exc).split())) from None
    finally:
        loader.dispose()
    return parse_config_items(items, PREFIX)


def parse_seed_text(text: str, environ: Mapping[str, str] | None = None,
                    log: logging.Logger | None = None) -> WorkerConfig:
    return parse_seed_yaml(expand_env(text, environ, log))


def read_seed_file(path: str, environ: Mapping[str, str] | None = None,
                   log: logging.Logger | None = None) -> WorkerConfig:
    """Read, expand and parse a seed file; raises ConfigError (``read <path>``, ``yaml parse``)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"read {path}", detail) from None
    return parse_seed_text(text, environ, log)


def load_seed_file(path: str, environ: Mapping[str, str] | None = None,
                   log: logging.Logger | None = None) -> WorkerConfig:
    """A configuration file for the ``call`` command, read like a seed.

    An unreadable file raises ``OSError`` (a usage error there); invalid content raises
    :class:`ConfigError` with the ``yaml parse`` prefix.
    """
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return parse_seed_text(text, environ, log)


def load_seed(path: str | None, environ: Mapping[str, str] | None = None,
              log: logging.Logger | None = None) -> WorkerConfig | None:
    """The seed for boot step 2: the parsed file, or ``None`` (with a warning) when unusable."""
    if path is None:
        return None
    logger = log or _log
    try:
        return read_seed_file(path, environ, logger)
    except ConfigError as exc:
        logger.warning("ignoring config seed %s: %s", path, exc)
        return None

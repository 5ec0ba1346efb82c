"""``config.example.yaml``, written from the key declarations (core/settings.py).

``python -m context_manager.config.example > config.example.yaml`` rewrites the file: every key in
its section (the sections in ``Section`` order, the keys in the record's order), each under its
declared example text and set to its default.
"""

from __future__ import annotations

import json
import sys
import textwrap
from typing import Any

import yaml

from context_manager.config.parse import WORKER_CONFIG, ConfigCodec
from context_manager.core.keys import Section

HEADER = """\
# context-manager configuration seed.
#
# Pass it with `context-manager --config config.example.yaml`. The file only SEEDS the
# `configuration` worker the first time (nothing stored yet); afterwards the stored value is
# authoritative and every key hot-reloads without a restart. Every key is optional: a missing
# key takes the default shown. Unknown keys, nulls, floats, negative numbers and quoted numbers
# are rejected, and the whole seed is then ignored (with a warning).
#
# Environment references (a dollar sign followed by the variable name in braces) are replaced by
# the variable's value before the file is parsed; an unset variable becomes empty, with a warning.
# There is no default-value syntax. Scalars follow YAML 1.2: write `true`/`false`
# (not `yes`/`on`) and plain integers (not `20_000` or `010`).
"""

# A comment line longer than this, once a profile's summary is put in, is wrapped.
WIDTH = 100


def yaml_scalar(value: Any) -> str:
    """A JSON scalar (or a list of them, as a flow sequence) as YAML text that every YAML reader
    (1.1 or 1.2) takes for that value."""
    if isinstance(value, list):
        return "[" + ", ".join(yaml_scalar(item) for item in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        # Quoted where a YAML 1.1 reader would see something else (`off` is false there).
        plain_reads_back = yaml.safe_load(f"k: {value}") == {"k": value}
        return value if plain_reads_back and value.strip() == value else json.dumps(value)
    raise TypeError(f"a key's example value must be a JSON scalar, not {type(value).__name__}")


def _comment(codec: ConfigCodec[Any], text: str) -> list[str]:
    lines = []
    for line in text.split("\n"):
        expanded = codec.table.expand(line)
        comment = f"# {expanded}".rstrip()
        if expanded != line and len(comment) > WIDTH:
            indent = "# " + expanded[:len(expanded) - len(expanded.lstrip())]
            lines.extend(textwrap.wrap(expanded.strip(), WIDTH, initial_indent=indent, subsequent_indent=indent))
        else:
            lines.append(comment)
    return lines


def example_yaml(codec: ConfigCodec[Any] = WORKER_CONFIG) -> str:
    """The whole file."""
    defaults = codec.defaults_object()
    out = [HEADER]
    for section in Section:
        keys = [key for key in codec.table.keys if key.section is section]
        if not keys:
            continue
        out.append(f"\n# --- {section.value} ---\n\n")
        for key in keys:
            out.extend(line + "\n" for line in _comment(codec, key.example))
            out.append(f"{key.name}: {yaml_scalar(defaults[key.name])}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(example_yaml())

"""Schema golden files: one per registered function, written only on explicit request.

A golden holds the function's id, description, metadata and both schemas, plus the list of
documented additions to the 1.1.6 schemas, as pretty JSON with sorted keys. Reviewers read the
diff of a regeneration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from context_manager.schemas import DOCUMENTED_ADDITIONS, function_definitions


def golden_file_name(function_id: str) -> str:
    return function_id.replace("::", ".") + ".json"


def default_golden_dir() -> Path:
    """``schemas/goldens`` of the source checkout, else of the current directory."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file():
        return checkout / "schemas" / "goldens"
    return Path.cwd() / "schemas" / "goldens"


def golden_document(definition: dict[str, Any]) -> dict[str, Any]:
    fid = definition["id"]
    return {
        "documented_additions": [pointer for owner, pointer in DOCUMENTED_ADDITIONS if owner == fid],
        "description": definition["description"],
        "function_id": fid,
        "metadata": definition["metadata"],
        "request_schema": definition["request_schema"],
        "response_schema": definition["response_schema"],
    }


def render_golden(definition: dict[str, Any]) -> str:
    return json.dumps(golden_document(definition), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def rendered_goldens() -> dict[str, str]:
    """File name -> expected file text, for every registered function."""
    return {golden_file_name(d["id"]): render_golden(d) for d in function_definitions()}


def write_goldens(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered_goldens().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

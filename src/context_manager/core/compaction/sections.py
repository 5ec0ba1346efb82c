"""The Markdown sections a summary carries forward under a heading of their own."""

from __future__ import annotations


def split_headed(summary: str, heading: str) -> tuple[str, str]:
    """(``summary`` without its sections under ``heading``, their lines): every section whose
    heading line is ``heading``, up to the next Markdown heading."""
    kept: list[str] = []
    section: list[str] = []
    inside = False
    for line in summary.split("\n"):
        if line.startswith("#"):
            inside = line.strip() == heading
            if inside:
                continue
        (section if inside else kept).append(line)
    return "\n".join(kept).strip("\n"), "\n".join(section)

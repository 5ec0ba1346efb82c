"""Every spec citation in the code and the documents names a section that exists in docs/spec/.

A citation names a part and a section: ``spec 03 §6.3``, ``(01 §7.2, §10 item 6)``,
``spec 04 §1.5–§1.10, §2.5–§2.12``, ``spec 01 §8.4, 04 §2.10, §4.2``. Part ``NN`` is the file
``docs/spec/NN-*.md`` and section ``X.Y`` one of its headings numbered ``X.Y`` (``## 2.``,
``### 2.1``, ``#### 3.7.5``). A ``§`` without a part continues the citation before it when only
a comma, semicolon, slash, dash or ``and`` separates them; otherwise it belongs to the one part
its file cites (a test module about part 04 writes ``# --- §2.4 schema``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "docs" / "spec"
PARTS = ("01", "02", "03", "04")

# Where citations are written: source, tests, benchmark and script code, and the documents.
SCANNED_TREES = ("src", "tests", "bench", "scripts")
SCANNED_DOCUMENTS = ("README.md", "BENCHMARKS.md", "RELIABILITY.md", "CHANGELOG.md")
# Every page of docs/ but the engine protocol brief, whose own section signs number its sections.
UNSCANNED_PAGES = ("iii-engine-protocol.md",)

_HEADING = re.compile(r"#{1,6}[ \t]+(\d+(?:\.\d+)*)\.?(?=[ \t])")
_FENCE = re.compile(r"[ \t]*(```|~~~)")
# An optional part right before the section sign, then the section number.
_TOKEN = re.compile(r"(?:\b(?P<part>\d\d)\s+)?§(?P<section>\d+(?:\.\d+)*)")
_CONTINUES = re.compile(r"\s*(?:[,;/]|and)?\s*")
_RANGE = re.compile(r"\s*[–-]\s*")


@dataclass(frozen=True, slots=True)
class Citation:
    where: str  # path:line
    part: str | None  # None: no part can be told
    section: str


def spec_file(part: str) -> Path:
    """The one file of a part, e.g. ``01`` -> ``01-wire-types-counting-budget.md``."""
    matches = sorted(SPEC_DIR.glob(f"{part}-*.md"))
    if len(matches) != 1:
        raise LookupError(f"part {part}: expected one file docs/spec/{part}-*.md, found {len(matches)}")
    return matches[0]


def heading_numbers(markdown: str) -> frozenset[str]:
    """The section numbers of a part's headings, outside fenced code blocks."""
    numbers: set[str] = set()
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := _HEADING.match(line)):
            numbers.add(match.group(1))
    return frozenset(numbers)


def _range_sections(first: str, last: str) -> list[str]:
    """Every section from ``first`` to ``last`` when they differ only in their last number."""
    head_a, _, tail_a = first.rpartition(".")
    head_b, _, tail_b = last.rpartition(".")
    if head_a != head_b or int(tail_a) >= int(tail_b):
        return [first, last]
    prefix = f"{head_a}." if head_a else ""
    return [f"{prefix}{n}" for n in range(int(tail_a), int(tail_b) + 1)]


def citations_in(text: str, where: str) -> list[Citation]:
    """The citations of one file's text, ranges expanded, each with its part."""
    tokens = list(_TOKEN.finditer(text))
    named_parts = {m.group("part") for m in tokens if m.group("part")}
    home_part = next(iter(named_parts)) if len(named_parts) == 1 else None
    found: list[Citation] = []
    previous: re.Match[str] | None = None
    previous_part: str | None = None
    for token in tokens:
        line = text.count("\n", 0, token.start()) + 1
        section = token.group("section")
        gap = text[previous.end() : token.start()] if previous is not None else None
        part = token.group("part")
        if part is None:
            continues = gap is not None and (_CONTINUES.fullmatch(gap) or _RANGE.fullmatch(gap))
            part = previous_part if continues else home_part
        if gap is not None and token.group("part") is None and _RANGE.fullmatch(gap) and part == previous_part:
            sections = _range_sections(previous.group("section"), section)[1:]
        else:
            sections = [section]
        found.extend(Citation(f"{where}:{line}", part, s) for s in sections)
        previous, previous_part = token, part
    return found


def scanned_files() -> list[Path]:
    """Every file that may cite the spec; this module's own examples are not citations."""
    files = [ROOT / name for name in SCANNED_DOCUMENTS if (ROOT / name).is_file()]
    files.extend(page for page in sorted((ROOT / "docs").glob("*.md")) if page.name not in UNSCANNED_PAGES)
    for tree in SCANNED_TREES:
        files.extend(sorted((ROOT / tree).rglob("*.py")))
    this = Path(__file__).resolve()
    return [path for path in files if path.resolve() != this]


def repository_citations() -> list[Citation]:
    found: list[Citation] = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        found.extend(citations_in(text, str(path.relative_to(ROOT))))
    return found


# --- the parts and their headings ----------------------------------------------------------


@pytest.mark.parametrize("part", PARTS)
def test_each_part_is_one_file(part: str) -> None:
    assert spec_file(part).name.startswith(f"{part}-")


def test_headings_are_read_at_every_depth_and_never_inside_code_blocks() -> None:
    markdown = "\n".join([
        "# 03 — Title",
        "## 0. Shared conventions",
        "### 0.3 Whitespace",
        "#### 3.7.5 Folding frames",
        "```text",
        "# 146 a comment in a code block",
        "## 9.9 not a heading",
        "```",
        "### Example 18 — lease files",
        "## 10. Open points",
    ])
    assert heading_numbers(markdown) == {"03", "0", "0.3", "3.7.5", "10"}


def test_the_copied_parts_have_the_sections_the_code_cites_most() -> None:
    assert {"2", "2.3", "2.6", "3.7", "10"} <= heading_numbers(spec_file("01").read_text(encoding="utf-8"))
    numbers_03 = heading_numbers(spec_file("03").read_text(encoding="utf-8"))
    assert {"0.3", "3.7", "3.7.5", "6.4"} <= numbers_03
    assert "146" not in numbers_03  # a `#` comment inside a fenced block of §1.4


# --- reading citations ---------------------------------------------------------------------


def _pairs(text: str) -> list[tuple[str | None, str]]:
    return [(c.part, c.section) for c in citations_in(text, "x")]


def test_a_list_keeps_its_part_until_another_part_is_named() -> None:
    assert _pairs("(spec 01 §8.4, 04 §2.10, §4.2, §6.5)") == [
        ("01", "8.4"), ("04", "2.10"), ("04", "4.2"), ("04", "6.5"),
    ]
    assert _pairs("(spec 03 §3.8, §5.6; 04 §1.11, §2.6-§2.7)") == [
        ("03", "3.8"), ("03", "5.6"), ("04", "1.11"), ("04", "2.6"), ("04", "2.7"),
    ]


def test_a_range_names_every_section_in_it() -> None:
    assert _pairs("(spec 04 §1.5–§1.8)") == [("04", "1.5"), ("04", "1.6"), ("04", "1.7"), ("04", "1.8")]
    assert _pairs("(spec 03 §2.3 – §2.4)") == [("03", "2.3"), ("03", "2.4")]


def test_a_citation_may_break_across_lines_and_carry_an_item() -> None:
    assert _pairs("the round trip of spec 03\n§5.7: it keeps") == [("03", "5.7")]
    assert _pairs("text-only (01 §7.2, §10 item 6).") == [("01", "7.2"), ("01", "10")]


def test_a_bare_section_belongs_to_the_one_part_its_file_cites() -> None:
    text = '"""Parsing (spec 04 §2.1) and the schema (§2.4)."""\n# --- §2.2 worked examples\n'
    assert _pairs(text) == [("04", "2.1"), ("04", "2.4"), ("04", "2.2")]
    assert _pairs("(01 §3.7) and later (§2.4) and (03 §1)") == [("01", "3.7"), (None, "2.4"), ("03", "1")]


def test_a_section_sign_without_a_number_is_no_citation() -> None:
    assert _pairs("(README.md § AgentFunction) and context-manager.md § Model input") == []


# --- the repository ------------------------------------------------------------------------


def test_known_modules_are_scanned() -> None:
    found = {(c.where.rsplit(":", 1)[0], c.part, c.section) for c in repository_citations()}
    assert {
        ("src/context_manager/wire/codec.py", "01", "2"),
        ("src/context_manager/wire/codec.py", "01", "2.6"),
        ("src/context_manager/adapters/router_summarizer.py", "03", "3.7.5"),
        ("tests/adapters/test_fs_store.py", "03", "6.3"),
        ("src/context_manager/worker.py", "04", "2.12"),
    } <= found


def test_every_citation_names_an_existing_section() -> None:
    sections = {part: heading_numbers(spec_file(part).read_text(encoding="utf-8")) for part in PARTS}
    unresolved = [
        f"{c.where}: {'?' if c.part is None else c.part} §{c.section}"
        for c in repository_citations()
        if c.part not in sections or c.section not in sections[c.part]
    ]
    assert unresolved == []

"""The entities a message mentions, and the texts they are looked up in (the recall instrument).

This module is the benchmark's own definition; it shares no code with the worker's extraction.

Entities of one text, found in this order; each match blanks its characters so that a later,
smaller pattern does not find a piece of it again (``src/a_b.py`` is one entity, not three):

1. URLs: ``https?://`` followed by characters other than whitespace and ``<>"'`()[]{}|\\^``.
2. Paths with a slash: a run of ``[\\w.~+@/-]`` holding a ``/``, kept when it starts with
   ``/``, ``~/``, ``./`` or ``../``, or holds two slashes or more, or its last segment ends with
   a file extension (``.`` then a letter and up to 7 letters or digits). ``src/app.py``,
   ``/testbed/x``, ``a/b/c``: kept; ``and/or``, ``read/write``, ``src/app``: not.
3. File names: a name ending in one of :data:`EXTENSIONS` (``setup.py``, ``a.b.json``).
4. Dotted names: two identifiers or more joined by ``.`` (``os.path.join``, ``self.items``).
5. Error names: an identifier ending in ``Error``, ``Exception`` or ``Warning`` with at least
   one character before it (``ValueError``, ``IOError``); ``Traceback`` is not an entity (every
   failing run prints it; it names nothing).
6. Calls: an identifier directly followed by ``(`` (``serialize(``), the name without ``(``.
7. snake_case: an identifier with an underscore between two letters or digits (``max_retries``,
   ``__init__``, ``MAX_SIZE``).
8. CamelCase: an identifier with a lower-case letter or digit followed by a capital, or two
   capitals followed by a lower-case letter (``TimeDelta``, ``getUser``, ``JSONDecoder``).
9. Backticked spans: the text between two backticks when it is 4 to 100 characters and holds
   no whitespace (```pytest```), looked for in the original text (not blanked).

Normalisation of an entity: strip leading ``'"([{<`` and trailing ``.,;:!?'"`)]}>`` characters
and a trailing ``()``, then a leading ``./``, then case-fold. An entity is dropped when it is
shorter than :data:`MIN_LENGTH` (4) characters, holds no letter, or is in :data:`STOP` (Python's
keywords, common built-ins, literals and words such as ``self``, ``none``, ``true``, ``error``).

Texts of a message (``mention_text``: what the message *mentions* when it is a future message):
the ``text`` blocks of ``user`` and ``assistant`` messages, and every string leaf (recursively,
keys excluded) of the ``arguments`` of an assistant's ``function_call`` blocks; other roles
(``function_result``, ``custom``) mention nothing. ``full_text`` (what a message *holds*, for
"appeared earlier" and for the returned context): every ``text`` and ``thinking`` block, each
``function_call``'s ``function_id`` and argument string leaves, and the blocks of a
``function_result`` (block or message) recursively, whatever the role. ``context_text``: the
system prompt (with the summary the worker put there) and the ``full_text`` of every message.

Texts are compared after :func:`normalize_text`: case-folded, every run of whitespace made one
space. An entity is *in* a text when its normalised form is a substring of the normalised text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

MIN_LENGTH = 4

EXTENSIONS = (
    "py", "pyi", "pyx", "ipynb", "js", "mjs", "cjs", "ts", "tsx", "jsx", "json", "jsonl", "yaml",
    "yml", "toml", "ini", "cfg", "conf", "env", "lock", "md", "rst", "txt", "csv", "tsv", "xml",
    "html", "htm", "css", "scss", "sql", "sh", "bash", "zsh", "ps1", "bat", "c", "h", "cc", "cpp",
    "cxx", "hpp", "hh", "rs", "go", "java", "kt", "kts", "scala", "rb", "php", "pl", "swift", "m",
    "cs", "fs", "lua", "r", "jl", "dart", "ex", "exs", "erl", "hs", "ml", "pony", "zig", "nim",
    "vue", "svelte", "proto", "graphql", "gradle", "mk", "cmake", "dockerfile", "tf", "log",
    "patch", "diff", "gz", "zip", "tar", "whl", "dcm", "png", "jpg", "jpeg", "gif", "svg", "pdf",
    "db", "sqlite", "pem", "crt", "so", "dll", "exe", "bin", "wasm", "tmpl", "j2", "properties",
)

STOP = frozenset({
    # Python's keywords and literals
    "false", "none", "true", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
    "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield", "null", "self", "cls",
    # common built-ins, called everywhere
    "print", "len", "str", "int", "float", "bool", "dict", "list", "set", "tuple", "range", "open",
    "type", "isinstance", "issubclass", "super", "format", "repr", "sorted", "enumerate", "zip",
    "map", "filter", "getattr", "setattr", "hasattr", "object", "input", "bytes", "round", "min",
    "max", "sum", "abs", "iter", "next", "vars", "main", "init", "__init__", "__main__",
    "__name__", "__init__.py", "__main__.py",
    # words every error message or prose carries
    "error", "exception", "warning", "traceback", "e.g", "i.e", "etc", "todo", "note", "http",
    "https", "json", "yaml", "python", "python3", "file", "files", "path", "test", "tests",
    "function", "value", "values", "example", "using", "this", "that", "then", "here", "there",
    "what", "when", "where", "which", "will", "would", "should", "could", "have", "been", "also",
})

_URL = re.compile(r"https?://[^\s<>\"'`()\[\]{}|\\^]+")
_SLASHED = re.compile(r"(?<![\w.~+@/-])[\w.~+@-]*/[\w.~+@/-]*")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_FILE = re.compile(r"(?<![\w.-])[\w.-]*\w\.(?:" + "|".join(EXTENSIONS) + r")(?![\w])", re.IGNORECASE)
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_ERROR = re.compile(r"\b[A-Za-z_]\w*(?:Error|Exception|Warning)\b")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_SNAKE = re.compile(r"\b_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*\b")
_CAMEL = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9]*\b")
_BACKTICKED = re.compile(r"`([^`\s]{4,100})`")
_LEADING = "'\"([{<"
_TRAILING = ".,;:!?'\"`)]}>"
_WHITESPACE = re.compile(r"\s+")
_LETTER = re.compile(r"[^\W\d_]")


def normalize_text(text: str) -> str:
    """Case-folded, every run of whitespace one space."""
    return _WHITESPACE.sub(" ", text).casefold()


def normalize_entity(raw: str) -> str | None:
    """The compared form of one matched entity, or ``None`` when it is dropped."""
    entity = raw.lstrip(_LEADING)
    while True:
        stripped = entity.rstrip(_TRAILING)
        if stripped.endswith("()"):
            stripped = stripped[:-2]
        if stripped == entity:
            break
        entity = stripped
    if entity.startswith("./"):
        entity = entity[2:]
    entity = entity.casefold()
    if len(entity) < MIN_LENGTH or not _LETTER.search(entity) or entity in STOP:
        return None
    return entity


def _is_path(token: str) -> bool:
    token = token.rstrip("/")
    if token.startswith(("/", "~/", "./", "../")) or token.count("/") >= 2:
        return True
    return bool(_EXTENSION.search(token.rsplit("/", 1)[-1]))


def entities(text: str) -> set[str]:
    """The normalised entities of ``text`` (see the module docstring)."""
    found: set[str] = set()
    work = text

    def take(pattern: re.Pattern[str], keep: Any = None, group: int = 0) -> None:
        nonlocal work

        def blank(match: re.Match[str]) -> str:
            token = match.group(group)
            if keep is not None and not keep(token):
                return match.group(0)
            entity = normalize_entity(token)
            if entity is not None:
                found.add(entity)
            return " " * len(match.group(0))

        work = pattern.sub(blank, work)

    take(_URL)
    take(_SLASHED, _is_path)
    take(_FILE)
    take(_DOTTED)
    take(_ERROR)
    take(_CALL, group=1)
    take(_SNAKE)
    take(_CAMEL)
    for match in _BACKTICKED.finditer(text):
        entity = normalize_entity(match.group(1))
        if entity is not None:
            found.add(entity)
    return found


def _leaves(value: Any) -> Iterable[str]:
    """Every string leaf of a JSON value (object keys excluded), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def mention_text(message: dict[str, Any]) -> str:
    """What a future message mentions: user and assistant text, the assistant's call arguments."""
    role = message.get("role")
    if role not in ("user", "assistant"):
        return ""
    parts: list[str] = []
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "function_call" and role == "assistant":
            parts.extend(_leaves(block.get("arguments")))
    return "\n".join(parts)


def _block_texts(blocks: Sequence[dict[str, Any]]) -> Iterable[str]:
    for block in blocks:
        kind = block.get("type")
        if kind in ("text", "thinking"):
            yield block.get("text", "")
        elif kind == "function_call":
            yield block.get("function_id", "")
            yield from _leaves(block.get("arguments"))
        elif kind == "function_result":
            yield from _block_texts(block.get("content") or ())


def full_text(message: dict[str, Any]) -> str:
    """Everything a message holds (every role): texts, call names and arguments, results."""
    return "\n".join(_block_texts(message.get("content") or ()))


def context_text(system_prompt: str | None, messages: Sequence[dict[str, Any]]) -> str:
    """A returned context's text: its system prompt, then every message's ``full_text``."""
    return "\n".join([system_prompt or "", *(full_text(m) for m in messages)])

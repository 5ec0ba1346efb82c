"""The entities a message mentions, and the texts they are looked up in (the recall instrument).

This module is the benchmark's own definition; it shares no code with the worker's extraction.

Entities of one text, found in this order; each match blanks its characters so that a later,
smaller pattern does not find a piece of it again (``src/a_b.py`` is one entity, not three).
Path-like kinds (1-4):

1. URLs: ``https?://`` followed by characters other than whitespace and ``<>"'`()[]{}|\\^``.
2. Paths with a slash: a run of ``[\\w.~+@/-]`` holding a ``/``, kept when it starts with
   ``/``, ``~/``, ``./`` or ``../``, or holds two slashes or more, or its last segment ends with
   a file extension (``.`` then a letter and up to 7 letters or digits). ``src/app.py``,
   ``/testbed/x``, ``a/b/c``: kept; ``and/or``, ``read/write``, ``src/app``: not.
3. File names: a name ending in ``.`` and one of :data:`EXTENSIONS` (``setup.py``, ``a.b.json``).
4. Error names: an identifier ending in ``Error``, ``Exception`` or ``Warning`` with at least
   one character before it (``ValueError``, ``IOError``, ``errors.ValidationError`` gives
   ``validationerror`` and ``errors.`` is left to 5). ``Traceback`` is not an entity (every
   failing run prints it; it names nothing).

Code identifiers (5-9):

5. Dotted names: two identifiers or more joined by ``.`` (``os.path.join``, ``self.items``);
   dropped when the first is one character (``f.write``, ``e.args``: local handles).
6. Calls: an identifier directly followed by ``(`` (``serialize(``), the name without ``(``.
7. snake_case: an identifier with an underscore between two letters or digits (``max_retries``,
   ``__init__``, ``MAX_SIZE``).
8. CamelCase: an identifier with a lower-case letter or digit followed by a capital, or two
   capitals followed by a lower-case letter (``TimeDelta``, ``getUser``, ``JSONDecoder``).
9. Backticked spans: the text between two backticks when it is 4 to 100 characters of
   ``[A-Za-z0-9_.:/@+-]``, optionally ending in ``()`` (```pytest```, ```a.py::test_x```),
   looked for in the original text (not blanked).

Normalisation of an entity: strip leading ``'"([{<`` and trailing ``.,;:!?'"`)]}>`` characters
and a trailing ``()``, then a leading ``./``, then case-fold. An entity is dropped when it is
shorter than :data:`MIN_LENGTH` (4) characters, holds no letter, or is in :data:`STOP` (Python's
keywords and literals, common built-ins and string, list and dict methods such as ``join`` and
``startswith``, and words such as ``self``, ``error``, ``test``, ``file``).

What a message *mentions* (``mentions``, for the future messages): only ``user`` and
``assistant`` messages mention anything. Their ``text`` blocks give every kind. Each string
leaf (recursively, object keys excluded) of an assistant's ``function_call`` arguments gives the
path-like kinds (1-4) from the whole string and every kind from its first line only: a
multi-line argument is a script or file content the agent writes out, whose identifiers are
mostly boilerplate, while its first line is the command (``pytest tests/a.py::test_x``).
``function_result`` and ``custom`` messages mention nothing.

What a message *holds* (``full_text``, for "appeared earlier" and for the returned context):
every ``text`` and ``thinking`` block, each ``function_call``'s ``function_id`` and argument
string leaves, and the blocks of a ``function_result`` (block or message) recursively, whatever
the role. ``context_text``: the system prompt (with the summary the worker put there) and the
``full_text`` of every message, one per line.

Texts are compared after :func:`normalize_text`: case-folded, every run of whitespace made one
space. An entity is *in* a text when its normalised form is a substring of the normalised text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
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
    # common built-ins
    "print", "len", "str", "int", "float", "bool", "dict", "list", "set", "tuple", "range", "open",
    "type", "isinstance", "issubclass", "super", "format", "repr", "sorted", "enumerate", "zip",
    "map", "filter", "getattr", "setattr", "hasattr", "object", "input", "bytes", "round", "min",
    "max", "sum", "abs", "iter", "next", "vars", "exit", "main", "init", "__init__", "__main__",
    "__name__", "__init__.py", "__main__.py",
    # string, list and dict methods
    "join", "split", "splitlines", "strip", "lstrip", "rstrip", "startswith", "endswith",
    "replace", "find", "lower", "upper", "encode", "decode", "append", "extend", "insert", "remove",
    "pop", "sort", "index", "count", "copy", "items", "keys", "values", "get", "update", "read",
    "write", "readlines", "writelines", "readline", "close", "group", "match", "search",
    # words every error message or prose carries
    "error", "exception", "warning", "traceback", "e.g", "i.e", "etc", "todo", "note", "http",
    "https", "json", "yaml", "python", "python3", "file", "files", "path", "test", "tests",
    "function", "value", "example", "using", "this", "that", "then", "here", "there",
    "what", "when", "where", "which", "will", "would", "should", "could", "have", "been", "also",
})

_URL = re.compile(r"https?://[^\s<>\"'`()\[\]{}|\\^]+")
_SLASHED = re.compile(r"(?<![\w.~+@/-])[\w.~+@-]*/[\w.~+@/-]*")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_FILE = re.compile(r"(?<![\w.-])[\w.-]*\w\.(?:" + "|".join(EXTENSIONS) + r")(?!\w)", re.IGNORECASE)
_ERROR = re.compile(r"\b[A-Za-z_]\w*(?:Error|Exception|Warning)\b")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_SNAKE = re.compile(r"\b_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*\b")
_CAMEL = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9]*\b")
_BACKTICKED = re.compile(r"`([A-Za-z0-9_.:/@+-]{4,100}(?:\(\))?)`")
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
    while entity:  # one character (or one "()") at a time: "f()." ends as "f"
        if entity.endswith("()"):
            entity = entity[:-2]
        elif entity[-1] in _TRAILING:
            entity = entity[:-1]
        else:
            break
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


def _is_dotted(token: str) -> bool:
    return len(token.split(".", 1)[0]) > 1


# (pattern, which matches count, the group that is the entity), in the order they are applied.
_PATH_LIKE: tuple[tuple[re.Pattern[str], Callable[[str], bool] | None, int], ...] = (
    (_URL, None, 0), (_SLASHED, _is_path, 0), (_FILE, None, 0), (_ERROR, None, 0))
_IDENTIFIERS: tuple[tuple[re.Pattern[str], Callable[[str], bool] | None, int], ...] = (
    (_DOTTED, _is_dotted, 0), (_CALL, None, 1), (_SNAKE, None, 0), (_CAMEL, None, 0))


def entities(text: str, identifiers: bool = True) -> set[str]:
    """The normalised entities of ``text``: the path-like kinds, and the code identifiers unless
    ``identifiers`` is false (see the module docstring)."""
    found: set[str] = set()
    work = text
    for pattern, keep, group in _PATH_LIKE + (_IDENTIFIERS if identifiers else ()):

        def blank(match: re.Match[str]) -> str:
            token = match.group(group)
            if keep is not None and not keep(token):
                return match.group(0)
            entity = normalize_entity(token)
            if entity is not None:
                found.add(entity)
            return " " * len(match.group(0))

        work = pattern.sub(blank, work)
    if identifiers:
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


def mentions(message: dict[str, Any]) -> set[str]:
    """The entities a (future) message mentions: user and assistant text, the assistant's call
    arguments (path-like kinds from each string, identifiers from its first line)."""
    role = message.get("role")
    if role not in ("user", "assistant"):
        return set()
    found: set[str] = set()
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            found |= entities(block.get("text", ""))
        elif kind == "function_call" and role == "assistant":
            for leaf in _leaves(block.get("arguments")):
                found |= entities(leaf, identifiers=False)
                found |= entities(leaf.split("\n", 1)[0])
    return found


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

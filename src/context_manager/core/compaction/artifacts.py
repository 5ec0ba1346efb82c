"""The artifact trail of a history (``working_set: true``): what the agent touched, in order.

:func:`trail` reads a list of messages once and reports every sighting of an artifact as a
:class:`Sighting` (kind, key, detail, message index):

* ``file``: a path a function call acted on, with what was done: ``read`` (read, viewed,
  searched, listed), ``edited``, ``created`` (written where no earlier sighting knew the path),
  ``ran`` (executed, or handed to a test runner or interpreter). Paths come from call arguments:
  keys that name a path, editor commands (``view``/``create``/``str_replace``/``insert``), and
  shell commands, which are split into simple commands (``&&``, ``||``, ``;``, ``|``, newlines)
  whose program says the action (``cat``/``grep``/``ls``… read, ``sed -i`` edits, ``> file``
  writes, ``python``/``pytest``/``make``… run); a call with no path of its own that edits
  (an ``edit`` after an ``open``) acts on the last file opened or created;
* ``seen``: a path a function result surfaced (listing and search output, stack traces), a
  user or assistant text named, or the code a call carries names (a script's ``open(...)``);
* ``symbol``: a code symbol the user or the agent named: an identifier in a text that carries a
  mark of code (an underscore, an inner capital, a dot between names, a call's parenthesis, or
  backticks), a definition (``def``/``class``/``fn``/``function``) in call arguments, an
  identifier in a search pattern, and the short one-word values passed to a function (the ids an
  agent acts on);
* ``error``: an exception name (``…Error``, ``…Exception``) or an ``error:`` line in a result or
  a text, with the line it stood on; ``cleared`` when a later result of a call on the same
  subject (its first path, else its program, else its function) had no error;
* ``url``: an ``http(s)`` URL anywhere in texts and call arguments;
* ``command``: a shell command line a call ran (first line, whitespace collapsed).

Results are read at their first :data:`RESULT_HEAD_CHARS` and last :data:`RESULT_TAIL_CHARS`
characters (a stack trace ends a result), so the cost is bounded per message.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from context_manager.wire.messages import resolve_inline_function_ids

Message = dict[str, Any]

FILE = "file"
SEEN = "seen"
SYMBOL = "symbol"
ERROR = "error"
URL = "url"
COMMAND = "command"

READ = "read"
EDITED = "edited"
CREATED = "created"
RAN = "ran"
OPEN = "open"
CLEARED = "cleared"

RESULT_HEAD_CHARS = 8000
RESULT_TAIL_CHARS = 2000
COMMAND_CHARS = 2000
CODE_CHARS = 8000
ERROR_LINE_CHARS = 120
SHORT_VALUE_CHARS = 64
MAX_RESULT_PATHS = 40
MAX_RESULT_ERRORS = 3


@dataclass(frozen=True, slots=True)
class Sighting:
    kind: str
    key: str
    detail: str
    position: int


_URL = re.compile(r"https?://[^\s\"'<>`()\[\]{}]+")
# A path candidate: no spaces or quoting characters; checked further by _is_path.
_PATH_TOKEN = re.compile(r"[\w~.@+-]*(?:/[\w.@+-]+)+/?|[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b")
_EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
# A bare name (no "/") is a file name only with one of these extensions, so "self.name" and
# "os.path" are not files.
FILE_EXTENSIONS = frozenset(
    "py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte c h cc cpp cxx hpp hh m mm rs go java kt kts "
    "scala rb php pl pm sh bash zsh fish ps1 bat lua r jl swift dart cs fs ex exs erl hs ml elm clj "
    "pony zig nim sql md rst txt adoc tex csv tsv json jsonl yaml yml toml ini cfg conf env lock xml "
    "html htm css scss sass less svg png jpg jpeg gif webp pdf log out diff patch orig bak backup "
    "proto graphql gradle cmake mk make dockerfile tf hcl gz zip tar whl egg so dll dylib wasm "
    "properties plist".split())
_LINE_SUFFIX = re.compile(r"(?::\d+)+:?$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(\()?")
_BACKTICK = re.compile(r"`([^`\n]{1,120})`")
_DEFINITION = re.compile(r"\b(?:def|class|fn|func|function|struct|interface|trait)\s+([A-Za-z_][A-Za-z0-9_]*)")
_IMPORT_BEFORE = re.compile(r"(?:^|[\s;(])(?:from|import)[ \t]+$")
_CD_PREFIX = re.compile(r"^cd \S+ && ")
_TAG = re.compile(r"</?[A-Za-z_][\w-]*>")
_ERROR_NAME = re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b")
_ERROR_LINE = re.compile(r"^\s*(?:error|fatal|FAILED|ERROR)\b[:\s]", re.MULTILINE)
_TRAILING = ".,;:!?'\")]}>"
_KEYWORDS = frozenset(("True", "False", "None", "null", "true", "false", "def", "class", "return",
                       "self", "this", "import", "from", "function", "const", "let", "var"))
# Names a call to which marks nothing the agent works on: language built-ins and the methods of
# strings, lists and dicts ("print(", "len(", "strip("). Named with a mark of their own
# (``text.strip``, ``load_all``) they stay.
_BUILTIN_CALLS = frozenset((
    "print", "len", "open", "range", "sorted", "reversed", "enumerate", "zip", "map", "filter",
    "min", "max", "sum", "abs", "round", "any", "all", "str", "int", "float", "bool", "bytes",
    "list", "dict", "set", "tuple", "type", "isinstance", "issubclass", "hasattr", "getattr",
    "setattr", "delattr", "super", "repr", "iter", "next", "input", "exit", "format", "vars",
    "dir", "id", "hash", "callable", "object", "strip", "lstrip", "rstrip", "split", "join",
    "replace", "startswith", "endswith", "append", "extend", "insert", "items", "keys", "values",
    "get", "pop", "update", "lower", "upper", "read", "write", "close", "readlines", "splitlines",
    "find", "count", "index", "copy", "sort", "add", "remove", "encode", "decode", "require",
    "parseInt", "toString", "push", "log", "echo", "printf", "println", "assert", "main",
))
_SEGMENT_BREAKS = frozenset(("&&", "||", ";", "|", "&", ";;", "(", ")"))
_WRITE_REDIRECTS = frozenset((">", ">>", ">|", "&>"))

_READERS = frozenset((
    "cat", "head", "tail", "less", "more", "nl", "wc", "sed", "awk", "grep", "egrep", "fgrep", "rg",
    "ag", "ack", "find", "ls", "tree", "stat", "file", "diff", "cd", "git", "open", "view",
    "find_file", "search_file", "search_dir", "xxd", "od", "sort", "uniq", "cut", "readlink",
))
_RUNNERS = frozenset((
    "python", "python3", "python2", "pytest", "py.test", "node", "npm", "npx", "go", "cargo",
    "make", "bash", "sh", "zsh", "ruby", "java", "javac", "gcc", "g++", "cc", "clang", "rustc",
    "tox", "nox", "uv", "poetry", "deno", "bun", "php", "perl", "cmake", "ctest", "mvn", "gradle",
    "dotnet", "swift", "tsc", "jest", "mocha", "yarn", "pnpm", "ponyc", "coverage", "ninja",
))
_PATTERN_FIRST = frozenset(("grep", "egrep", "fgrep", "rg", "ag", "ack", "search_file", "search_dir"))
_SCRIPT_FIRST = frozenset(("sed", "awk"))
_PREFIXES = frozenset(("sudo", "time", "env", "nohup", "exec", "command", "xargs", "timeout", "nice"))
_SHELL_FUNCTIONS = ("bash", "shell", "exec", "terminal", "run", "command", "cmd", "console")
_PATH_KEYS = ("path", "file", "dir", "folder", "filename")
_EDITOR_ACTIONS = {"view": READ, "create": CREATED, "str_replace": EDITED, "insert": EDITED,
                   "undo_edit": EDITED, "write": CREATED, "edit": EDITED, "append": EDITED}


def clean_path(token: str) -> str:
    """``token`` without trailing punctuation or a ``:line[:col]`` suffix; ``""`` if no path."""
    token = token.rstrip(_TRAILING)
    token = _LINE_SUFFIX.sub("", token)
    if token.startswith("./") and len(token) > 2:
        token = token[2:]
    if len(token) > 1:
        token = token.rstrip("/")
    return token if _is_path(token) else ""


def _is_path(token: str) -> bool:
    if not token or len(token) > 240 or "//" in token or not any(c.isalpha() for c in token) \
            or any(c in token for c in "*?$\\"):
        return False
    if "/" in token:
        # "and/or", "1/2", "w/o": a path of two short plain words needs an extension.
        return token.startswith(("/", "~/", "../")) or _EXT.search(token) is not None \
            or token.count("/") >= 2
    # A bare file name: a known extension after a name with a letter.
    dot = token.rfind(".")
    stem, extension = token[:dot], token[dot + 1:].casefold()
    return dot > 0 and extension in FILE_EXTENSIONS and any(c.isalpha() for c in stem)


def paths_in_text(text: str) -> Iterator[str]:
    """Paths in free text, in order (URLs are skipped: they are not paths)."""
    spans = [(m.start(), m.end()) for m in _URL.finditer(text)]
    for match in _PATH_TOKEN.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue
        if match.start() > 0 and text[match.start() - 1] in "<.\\":
            continue  # a closing tag ("</output>"), the tail of a longer word
        path = clean_path(match.group())
        if path:
            yield path


def urls_in(text: str) -> Iterator[str]:
    for match in _URL.finditer(text):
        url = match.group().rstrip(_TRAILING)
        if len(url) > len("https://"):
            yield url


def _code_like(name: str, called: bool) -> bool:
    """An identifier that carries a mark of code, so prose words are left out."""
    if len(name) < 3:
        return False
    if "." in name:
        return all(len(part) >= 2 for part in name.split(".")) and not _is_path(name)
    core = name.strip("_")
    if not core:
        return False
    if called:
        return name not in _BUILTIN_CALLS
    if "_" in core:
        return True
    # An inner capital after a lower-case letter (camelCase, PascalCase with two words).
    rest = core[1:]
    return rest != rest.lower() and rest != rest.upper() \
        and any(a.islower() and b.isupper() for a, b in zip(core, rest))


def symbols_in(text: str) -> Iterator[str]:
    """Code symbols a text names: backticked identifiers and marked identifiers, in order."""
    text = _URL.sub(" ", text)  # a host name is not a symbol
    for match in _BACKTICK.finditer(text):
        span = match.group(1).strip()
        if span.endswith("()"):
            span = span[:-2]
        if span and " " not in span and _IDENT.fullmatch(span) and len(span) >= 3 \
                and not _is_path(span) and span not in _KEYWORDS:
            yield span
    seen: set[str] = set()
    for match in _IDENT.finditer(text):
        name = match.group()
        if name in seen or match.start() > 0 and text[match.start() - 1] == "\\":
            continue  # "\nName" in a string literal is an escape, not a name
        seen.add(name)
        called = name.endswith("(")
        if called:
            name = name[:-1]
        if _code_like(name, called) or "." in name and _imported(text, match.start()):
            yield name


def _imported(text: str, start: int) -> bool:
    """Does the name at ``start`` follow ``from`` or ``import``? Then it is a module, also when
    it reads like a file name (``django.conf``, ``app.json``)."""
    return _IMPORT_BEFORE.search(text, max(0, start - 16), start) is not None


def errors_in(text: str) -> Iterator[tuple[str, str]]:
    """(key, line) of each exception name and ``error:`` line of ``text``."""
    for match in _ERROR_NAME.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line = text[max(line_start, match.start()): line_end if line_end >= 0 else len(text)]
        yield match.group(), " ".join(line.split())[:ERROR_LINE_CHARS]
    for match in _ERROR_LINE.finditer(text):
        line_end = text.find("\n", match.end())
        line = " ".join(text[match.start(): line_end if line_end >= 0 else len(text)].split())
        line = line[:ERROR_LINE_CHARS]
        yield line, line


def _tokens(command: str) -> list[str]:
    # Lines after a heredoc marker are the heredoc's body, not commands.
    lines = command[:COMMAND_CHARS].split("\n")
    kept: list[str] = []
    for line in lines:
        kept.append(line)
        if "<<" in line:
            break
    text = " ; ".join(kept)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def _segments(command: str) -> Iterator[list[str]]:
    segment: list[str] = []
    for token in _tokens(command):
        if token in _SEGMENT_BREAKS:
            if segment:
                yield segment
            segment = []
        else:
            segment.append(token)
    if segment:
        yield segment


@dataclass(slots=True)
class _Command:
    """What one shell command line did: (path, action) pairs, symbols, its subject."""

    files: list[tuple[str, str]]
    symbols: list[str]
    subject: str | None


def shell_command(command: str) -> _Command:
    files: list[tuple[str, str]] = []
    symbols: list[str] = []
    subject: str | None = None
    for words in _segments(command):
        # Redirections first: "> file" writes it, "< file" reads it.
        plain: list[str] = []
        index = 0
        while index < len(words):
            word = words[index]
            if word in _WRITE_REDIRECTS or word == "<":
                if index + 1 < len(words):
                    path = clean_path(words[index + 1])
                    if path:
                        files.append((path, CREATED if word != "<" else READ))
                index += 2
                continue
            if word.startswith(("<<", "2>", "1>")):
                index += 1 if word not in ("<<", "<<-") else 2
                continue
            plain.append(word)
            index += 1
        while plain and (plain[0] in _PREFIXES or "=" in plain[0] and not plain[0].startswith("-")
                         or plain[0].isdigit()):
            plain = plain[1:]
        if not plain:
            continue
        program = plain[0].rsplit("/", 1)[-1]
        args = plain[1:]
        if program == "cd":
            continue  # the working directory is not an artifact
        if subject is None and program not in ("ls", "echo", "cat"):
            subject = program
        if program in _RUNNERS or plain[0].startswith("./"):
            action = RAN
            if plain[0].startswith("./"):
                path = clean_path(plain[0])
                if path:
                    files.append((path, RAN))
        elif program in ("sed", "perl") and any(a.startswith("-i") for a in args):
            action = EDITED
        elif program in ("touch", "mkdir", "cp", "tee"):
            action = CREATED
        elif program in ("mv", "patch"):
            action = EDITED
        elif program in _READERS:
            action = READ
        else:
            action = READ
        skip_first = program in _PATTERN_FIRST or (program in _SCRIPT_FIRST and "-e" not in args)
        expect_value = False
        for arg in args:
            if arg.startswith("-"):
                # "-k name" (pytest) and "-e pattern" take a value; "-m module" names a module.
                expect_value = arg in ("-k", "-e", "-m", "--pattern", "-name", "-iname")
                continue
            if expect_value:
                expect_value = False
                symbols.extend(s for s in _identifiers(arg))
                continue
            if skip_first:
                skip_first = False
                if program in _PATTERN_FIRST:
                    symbols.extend(name for name in _identifiers(arg) if _code_like(name, False))
                continue
            path = clean_path(arg)
            if path and " " not in arg:
                files.append((path, action))
                if subject in (None, program) and action == RAN:
                    subject = path
    return _Command(files, symbols, subject)


def _identifiers(text: str) -> Iterator[str]:
    for match in _IDENT.finditer(text):
        name = match.group().rstrip("(")
        if len(name) >= 3 and not _is_path(name):
            yield name


def _action_of(function_id: str) -> str:
    name = function_id.casefold()
    if any(word in name for word in ("write", "create", "new_file", "save")):
        return CREATED
    if any(word in name for word in ("edit", "replace", "patch", "insert", "apply", "modify", "update_file")):
        return EDITED
    return READ


def _is_shell(function_id: str, arguments: Any) -> bool:
    name = function_id.casefold()
    return isinstance(arguments, dict) and isinstance(arguments.get("command"), str) \
        and arguments["command"] not in _EDITOR_ACTIONS and any(word in name for word in _SHELL_FUNCTIONS)


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string) of every string in an argument value, depth first."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def _is_path_key(key: str) -> bool:
    key = key.casefold()
    return any(word in key for word in _PATH_KEYS)


def _result_text(blocks: list[dict[str, Any]]) -> str:
    text = "\n".join(block["text"] for block in blocks if block["type"] == "text")
    if len(text) <= RESULT_HEAD_CHARS + RESULT_TAIL_CHARS:
        return text
    return text[:RESULT_HEAD_CHARS] + "\n" + text[-RESULT_TAIL_CHARS:]


@dataclass(slots=True)
class _Walk:
    sightings: list[Sighting]
    known_files: set[str]
    current_file: str | None = None
    # call id -> subject of the call, for the results that answer it.
    subjects: dict[str, str] | None = None
    # subject -> indexes (into sightings) of its open errors.
    open_errors: dict[str, list[int]] | None = None

    def add(self, kind: str, key: str, detail: str, position: int) -> None:
        self.sightings.append(Sighting(kind, key, detail, position))

    def file(self, path: str, action: str, position: int) -> None:
        if action == CREATED and path in self.known_files:
            action = EDITED
        self.known_files.add(path)
        self.add(FILE, path, action, position)


def trail(head: Sequence[Message], known_files: set[str] | None = None) -> list[Sighting]:
    """Every artifact sighting of ``head`` in message order; ``known_files`` are paths an earlier
    summary already knew (a write to one of them is an edit, not a creation)."""
    walk = _Walk([], set(known_files or ()), subjects={}, open_errors={})
    inline_ids = resolve_inline_function_ids(list(head))
    for index, message in enumerate(head):
        role = message["role"]
        if role == "function_result":
            _result(walk, index, message.get("function_call_id"), message["function_id"],
                    message["content"], bool(message.get("is_error")))
            continue
        if role not in ("user", "assistant"):
            continue
        for block_index, block in enumerate(message["content"]):
            kind = block["type"]
            if kind in ("text", "thinking"):
                _text(walk, index, block["text"])
            elif kind == "function_call":
                _call(walk, index, block)
            elif kind == "function_result":
                _result(walk, index, block.get("function_call_id"),
                        inline_ids.get((index, block_index), ""), block["content"],
                        bool(block.get("is_error")))
    return walk.sightings


def _text(walk: _Walk, index: int, text: str) -> None:
    for url in urls_in(text):
        walk.add(URL, url, "", index)
    for path in paths_in_text(text):
        walk.add(SEEN, path, "", index)
    for symbol in symbols_in(text):
        walk.add(SYMBOL, symbol, "", index)
    for key, line in errors_in(text):
        walk.add(ERROR, key, line, index)


def _call(walk: _Walk, index: int, block: dict[str, Any]) -> None:
    function_id = str(block.get("function_id") or block.get("name") or "")
    arguments = block.get("arguments")
    subject: str | None = None
    if isinstance(arguments, dict) and _is_shell(function_id, arguments):
        command = arguments["command"]
        line = _CD_PREFIX.sub("", " ".join(command.split("\n", 1)[0].split()))
        if line:
            walk.add(COMMAND, line[:200], "", index)
        parsed = shell_command(command)
        for path, action in parsed.files:
            walk.file(path, action, index)
        for symbol in parsed.symbols:
            walk.add(SYMBOL, symbol, "", index)
        # The code the command carries (a script it writes, "python -c"): its marked names.
        for symbol in symbols_in(command[:CODE_CHARS]):
            walk.add(SYMBOL, symbol, "", index)
        # The paths that code names (a script's open("out.py.bak", "w")).
        if "\n" in command:
            for path in paths_in_text(command.split("\n", 1)[1][:CODE_CHARS]):
                walk.add(SEEN, path, "", index)
        for url in urls_in(command):
            walk.add(URL, url, "", index)
        subject = parsed.subject
    else:
        action = _action_of(function_id)
        if isinstance(arguments, dict) and isinstance(arguments.get("command"), str) \
                and arguments["command"] in _EDITOR_ACTIONS:
            action = _EDITOR_ACTIONS[arguments["command"]]
        acted = False
        for key, value in _strings(arguments):
            if key == "command" and value in _EDITOR_ACTIONS:
                continue
            for url in urls_in(value):
                walk.add(URL, url, "", index)
            for name in _DEFINITION.findall(value):
                walk.add(SYMBOL, name, "", index)
            if "\n" in value or len(value) > SHORT_VALUE_CHARS:
                for name in symbols_in(value[:CODE_CHARS]):
                    walk.add(SYMBOL, name, "", index)
                for path in paths_in_text(value[:CODE_CHARS]):
                    walk.add(SEEN, path, "", index)
            single = value.strip()
            if _is_path_key(key) or (" " not in single and "\n" not in single and clean_path(single)):
                path = clean_path(single)
                if path:
                    walk.file(path, action, index)
                    walk.current_file = path if action in (READ, CREATED) else walk.current_file
                    subject = subject or path
                    acted = True
                    continue
            if key in ("thought", "reasoning"):
                _text(walk, index, value)
            elif single and len(single) <= SHORT_VALUE_CHARS and " " not in single \
                    and "\n" not in single and any(c.isalpha() for c in single) and len(single) >= 3:
                walk.add(SYMBOL, single, "", index)
        if not acted and action == EDITED and walk.current_file is not None:
            walk.file(walk.current_file, EDITED, index)
            subject = walk.current_file
    call_id = block.get("id")
    if isinstance(call_id, str) and walk.subjects is not None:
        walk.subjects[call_id] = subject or function_id


def _result(walk: _Walk, index: int, call_id: Any, function_id: str,
            content: list[dict[str, Any]], is_error: bool) -> None:
    assert walk.subjects is not None and walk.open_errors is not None
    subject = walk.subjects.get(call_id, function_id) if isinstance(call_id, str) else function_id
    text = _result_text(content)
    found = 0
    seen_paths: set[str] = set()
    for path in paths_in_text(text):
        if path not in seen_paths:
            seen_paths.add(path)
            walk.add(SEEN, path, "", index)
            if len(seen_paths) >= MAX_RESULT_PATHS:
                break
    errors: dict[str, str] = {}
    for key, line in errors_in(text):
        if key not in errors:
            errors[key] = line
            if len(errors) >= MAX_RESULT_ERRORS:
                break
    if is_error and not errors:
        lines = (" ".join(_TAG.sub(" ", x).split()) for x in text.splitlines())
        line = next((x for x in lines if any(c.isalpha() for c in x)), "")
        if line:
            errors[line[:ERROR_LINE_CHARS]] = line[:ERROR_LINE_CHARS]
    if errors:
        opened = walk.open_errors.setdefault(subject, [])
        for key, line in errors.items():
            opened.append(len(walk.sightings))
            walk.add(ERROR, key, line, index)
            found += 1
    else:
        # A success on the same subject clears what failed there before.
        for at in walk.open_errors.pop(subject, []):
            old = walk.sightings[at]
            walk.add(ERROR, old.key, CLEARED, index)

"""Offline BPE encodings for OpenAI model families, and which model uses which.

The rank files ship gzipped beside this module (``data/<name>.tiktoken.gz``) and are checked
against the SHA-256 that tiktoken itself pins for the same encoding, so the counts are those of
the published vocabularies. Nothing here ever opens a network connection: a missing or corrupt
file makes the encoding unavailable (one log line) and callers fall back to the heuristic.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import logging
import threading
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import tiktoken

from context_manager.wire.errors import Error

log = logging.getLogger("context_manager.adapters.tokenizers")

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Split patterns and special tokens as tiktoken's public registry (tiktoken_ext.openai_public)
# defines them; a test compares them with the installed tiktoken.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    sha256: str  # of the uncompressed .tiktoken file
    pat_str: str
    special_tokens: dict[str, int]

    @property
    def filename(self) -> str:
        return f"{self.name}.tiktoken.gz"


CL100K_BASE = EncodingSpec(
    name="cl100k_base",
    sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    pat_str=_CL100K_PAT,
    special_tokens={
        _ENDOFTEXT: 100257,
        _FIM_PREFIX: 100258,
        _FIM_MIDDLE: 100259,
        _FIM_SUFFIX: 100260,
        _ENDOFPROMPT: 100276,
    },
)

O200K_BASE = EncodingSpec(
    name="o200k_base",
    sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    pat_str=_O200K_PAT,
    special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
)

SPECS: dict[str, EncodingSpec] = {spec.name: spec for spec in (CL100K_BASE, O200K_BASE)}

# Model id prefixes (lowercase, provider segment stripped); the longest match wins, so
# `gpt-4o-mini` is o200k while `gpt-4-turbo` is cl100k.
MODEL_PREFIXES: dict[str, str] = {
    "gpt-4o": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-5": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
}
_PREFIXES_LONGEST_FIRST = sorted(MODEL_PREFIXES, key=len, reverse=True)


def encoding_name_for_model(model_id: str) -> str | None:
    """The encoding of an OpenAI-family model id, or None for every other model."""
    name = model_id.lower()
    _, slash, rest = name.partition("/")
    if slash:
        name = rest  # one leading `provider/` segment, e.g. `openai/gpt-4o`
    for prefix in _PREFIXES_LONGEST_FIRST:
        if name.startswith(prefix):
            return MODEL_PREFIXES[prefix]
    return None


class EncodingUnavailable(Error):
    """The shipped rank file is missing, unreadable or not the expected vocabulary."""


def default_data_dir() -> Path:
    return Path(str(resources.files("context_manager.adapters.tokenizers") / "data"))


def read_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """Mergeable ranks from a gzipped ``.tiktoken`` file whose content hash must match."""
    try:
        raw = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise EncodingUnavailable(f"{path} is missing") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise EncodingUnavailable(f"{path} is unreadable ({exc})") from None
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected_sha256:
        raise EncodingUnavailable(f"{path} has sha256 {actual}, expected {expected_sha256}")
    ranks: dict[bytes, int] = {}
    # Same line format tiktoken's loader reads: `<base64 token> <rank>`.
    for line in raw.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise EncodingUnavailable(f"{path} has a malformed line {line[:40]!r}") from None
    return ranks


def build_encoding(spec: EncodingSpec, data_dir: Path | None = None) -> tiktoken.Encoding:
    """Load and verify one encoding; raises EncodingUnavailable."""
    ranks = read_ranks((data_dir or default_data_dir()) / spec.filename, spec.sha256)
    try:
        return tiktoken.Encoding(
            name=spec.name,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=spec.special_tokens,
        )
    except Exception as exc:  # the native constructor's errors are not a stable type
        raise EncodingUnavailable(f"{spec.name} could not be built ({exc})") from None


_loaded: dict[str, tiktoken.Encoding | None] = {}
_load_lock = threading.Lock()


def load_encoding(name: str) -> tiktoken.Encoding | None:
    """The shipped encoding ``name``, loaded once per process; None (logged once) if unusable."""
    try:
        return _loaded[name]
    except KeyError:
        pass
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = _load_or_none(name)
        return _loaded[name]


def _load_or_none(name: str) -> tiktoken.Encoding | None:
    spec = SPECS.get(name)
    if spec is None:
        log.warning("tokenizer %s is unknown; counting with the heuristic", name)
        return None
    try:
        return build_encoding(spec)
    except EncodingUnavailable as exc:
        log.warning("tokenizer %s unavailable: %s; counting with the heuristic", name, exc)
        return None


def forget_loaded() -> None:
    """Drop loaded encodings (tests that swap the data files use it)."""
    with _load_lock:
        _loaded.clear()


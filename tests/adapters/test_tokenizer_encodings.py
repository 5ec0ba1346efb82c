"""Shipped encodings: the same vocabularies and constructor arguments as tiktoken's registry,
exact counts against tiktoken itself, and a clean fallback when a file is missing or corrupt."""

import gzip
import logging

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

from context_manager.adapters.tokenizer_source import PACKAGED_TOKENIZERS
from context_manager.adapters.tokenizers import encodings, forget_estimators, tokenizer_for_encoding
from context_manager.adapters.tokenizers.encodings import SPECS, EncodingUnavailable, read_ranks
from context_manager.core.counting.estimate import HEURISTIC, estimator_for_model
from context_manager.core.settings import WorkerConfig

pytestmark = pytest.mark.slow  # loads and damages whole vocabulary files

AUTO = WorkerConfig(estimator="auto")

SAMPLES = {
    "empty": "",
    "ascii": "hello world",
    "prose": "The quick brown fox jumps over the lazy dog. It's 12345 o'clock!",
    "code": "def add(a: int, b: int) -> int:\n    return a + b  # sum\n\nprint(add(2, 40))\n",
    "cjk": "今日は良い天気ですね。我们去公园散步吧。한국어도 좋아요.",
    "emoji": "ship it 🚀🚀 👩‍👩‍👧 ✅ done",
    "special": "<|endoftext|> is plain text here",
    "spaces": "a   b\t\tc\r\n\r\n   \n",
}

# Counts cross-checked with an independent BPE implementation of the same vocabularies.
PINNED_COUNTS = {
    "cl100k_base": {"empty": 0, "ascii": 2, "prose": 18, "code": 30, "cjk": 33, "emoji": 23, "special": 11,
                    "spaces": 7},
    "o200k_base": {"empty": 0, "ascii": 2, "prose": 17, "code": 30, "cjk": 21, "emoji": 16, "special": 11,
                   "spaces": 7},
}
PINNED_IDS = {
    ("cl100k_base", "ascii"): [15339, 1917],
    ("o200k_base", "ascii"): [24912, 2375],
    ("o200k_base", "cjk"): [170411, 35015, 3826, 867, 25717, 131656, 788, 24809, 13817, 5312, 37075, 84748,
                            24952, 18208, 788, 114854, 5959, 5827, 90032, 7952, 13],
}


def registry_constructor_args(name, monkeypatch):
    """What tiktoken's own registry passes to `tiktoken.Encoding`, with the rank file it names."""
    requested = {}

    def fake_load(url, expected_hash=None):
        requested.update(url=url, expected_hash=expected_hash)
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    args = openai_public.ENCODING_CONSTRUCTORS[name]()
    return args, requested


@pytest.fixture(scope="module")
def reference_encodings():
    """tiktoken encodings built from tiktoken's registry arguments and the verified shipped ranks."""
    built = {}
    with pytest.MonkeyPatch.context() as mp:
        for name, spec in SPECS.items():
            args, _ = registry_constructor_args(name, mp)
            args["mergeable_ranks"] = read_ranks(encodings.default_data_dir() / spec.filename, spec.sha256)
            built[name] = tiktoken.Encoding(**args)
    return built


@pytest.fixture
def fresh_loading():
    encodings.forget_loaded()
    forget_estimators()
    yield
    encodings.forget_loaded()
    forget_estimators()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_constructor_arguments_and_hash_match_tiktoken_registry(name, monkeypatch):
    args, requested = registry_constructor_args(name, monkeypatch)
    spec = SPECS[name]
    assert args["name"] == spec.name
    assert args["pat_str"] == spec.pat_str
    assert args["special_tokens"] == spec.special_tokens
    assert requested["expected_hash"] == spec.sha256
    assert requested["url"].endswith(f"/{name}.tiktoken")


def test_o200k_hash_is_the_published_one():
    assert SPECS["o200k_base"].sha256 == "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    assert SPECS["cl100k_base"].sha256 == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_shipped_vocabulary_sizes(name, reference_encodings):
    ranks = read_ranks(encodings.default_data_dir() / SPECS[name].filename, SPECS[name].sha256)
    assert len(ranks) == {"cl100k_base": 100256, "o200k_base": 199998}[name]
    assert sorted(ranks.values()) == list(range(len(ranks)))


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_text_counts_equal_tiktoken_encode_ordinary(name, sample, reference_encodings):
    text = SAMPLES[sample]
    estimator = tokenizer_for_encoding(name)
    reference = reference_encodings[name].encode_ordinary(text)
    assert estimator.text(text) == len(reference) == PINNED_COUNTS[name][sample]
    if (name, sample) in PINNED_IDS:
        assert estimator.encoding.encode_ordinary(text) == reference == PINNED_IDS[(name, sample)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_long_texts_take_the_cached_path_with_the_same_counts(name, reference_encodings):
    text = "".join(SAMPLES.values()) * 20
    estimator = tokenizer_for_encoding(name)
    expected = len(reference_encodings[name].encode_ordinary(text))
    assert estimator.text(text) == expected
    assert estimator.text(text) == expected


def test_special_token_text_is_counted_as_plain_text():
    estimator = tokenizer_for_encoding("o200k_base")
    assert estimator.text("<|endoftext|>") == 7
    assert 199999 not in estimator.encoding.encode_ordinary("<|endoftext|>")


def write_gz(path, raw):
    path.write_bytes(gzip.compress(raw, mtime=0))


def damaged_copies(tmp_path):
    source = encodings.default_data_dir() / SPECS["o200k_base"].filename
    raw = gzip.decompress(source.read_bytes())
    altered = tmp_path / "altered"
    altered.mkdir()
    write_gz(altered / source.name, raw.replace(b" 100\n", b" 101\n", 1))
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / source.name).write_bytes(b"not a gzip stream")
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    (truncated / source.name).write_bytes(source.read_bytes()[:5000])
    missing = tmp_path / "missing"
    missing.mkdir()
    return {"altered": altered, "garbage": garbage, "truncated": truncated, "missing": missing}


@pytest.mark.parametrize("damage", ["altered", "garbage", "truncated", "missing"])
def test_unusable_file_falls_back_to_the_heuristic_with_one_log_line(
    damage, tmp_path, monkeypatch, caplog, fresh_loading
):
    data_dir = damaged_copies(tmp_path)[damage]
    monkeypatch.setattr(encodings, "default_data_dir", lambda: data_dir)
    with caplog.at_level(logging.WARNING, logger="context_manager.adapters.tokenizers"):
        assert estimator_for_model("gpt-4o", AUTO, PACKAGED_TOKENIZERS) is HEURISTIC
        assert estimator_for_model("gpt-4o-mini", AUTO, PACKAGED_TOKENIZERS) is HEURISTIC
    records = [r for r in caplog.records if r.name == "context_manager.adapters.tokenizers"]
    assert len(records) == 1
    message = records[0].getMessage()
    assert message.startswith("tokenizer o200k_base unavailable: ")
    assert message.endswith("; counting with the heuristic")


def test_a_damaged_encoding_does_not_affect_the_other(tmp_path, monkeypatch, fresh_loading):
    data_dir = damaged_copies(tmp_path)["missing"]
    real = encodings.default_data_dir()
    (data_dir / "cl100k_base.tiktoken.gz").write_bytes((real / "cl100k_base.tiktoken.gz").read_bytes())
    monkeypatch.setattr(encodings, "default_data_dir", lambda: data_dir)
    assert estimator_for_model("gpt-4o", AUTO, PACKAGED_TOKENIZERS) is HEURISTIC
    assert estimator_for_model("gpt-4", AUTO, PACKAGED_TOKENIZERS).kind == "tokenizer"


def test_read_ranks_reports_a_hash_mismatch(tmp_path):
    path = tmp_path / "x.tiktoken.gz"
    write_gz(path, b"YQ== 0\n")
    with pytest.raises(EncodingUnavailable, match="has sha256 .*, expected 00"):
        read_ranks(path, "00")


def test_read_ranks_reports_a_malformed_line(tmp_path):
    import hashlib

    raw = b"YQ== 0\nnot-a-line\n"
    path = tmp_path / "x.tiktoken.gz"
    write_gz(path, raw)
    with pytest.raises(EncodingUnavailable, match="malformed line"):
        read_ranks(path, hashlib.sha256(raw).hexdigest())

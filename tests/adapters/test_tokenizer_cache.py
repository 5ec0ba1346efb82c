"""The byte-bounded LRU of token counts, and the estimator's use of it across calls."""

import threading

from context_manager.adapters.tokenizers import SHARED_CACHE, TokenizerEstimator, tokenizer_for_encoding
from context_manager.adapters.tokenizers.cache import DIGEST_SIZE, ENTRY_OVERHEAD_BYTES, TokenCountCache, content_key
from context_manager.wire import decode as t

ENTRY = 1 + DIGEST_SIZE + ENTRY_OVERHEAD_BYTES  # cost of an entry with a 1-byte namespace


def key(i):
    return content_key(b"n", str(i).encode())


def test_content_key_is_namespace_plus_digest():
    k = content_key(b"o200k_base\x00m", b"{}")
    assert k.startswith(b"o200k_base\x00m") and len(k) == len(b"o200k_base\x00m") + DIGEST_SIZE
    assert content_key(b"a", b"x") != content_key(b"b", b"x") != content_key(b"a", b"y")


def test_bounded_by_bytes_and_least_recently_used_goes_first():
    cache = TokenCountCache(max_bytes=3 * ENTRY)
    for i in range(3):
        cache.put(key(i), i)
    assert (len(cache), cache.size_bytes) == (3, 3 * ENTRY)
    assert cache.get(key(0)) == 0  # 0 becomes the most recent
    cache.put(key(3), 3)
    assert cache.get(key(1)) is None
    assert [cache.get(key(i)) for i in (0, 2, 3)] == [0, 2, 3]
    assert (len(cache), cache.size_bytes) == (3, 3 * ENTRY)
    assert (cache.hits, cache.misses) == (4, 1)


def test_updating_a_key_does_not_grow_the_cache():
    cache = TokenCountCache(max_bytes=10 * ENTRY)
    cache.put(key(1), 5)
    cache.put(key(1), 6)
    assert (len(cache), cache.size_bytes, cache.get(key(1))) == (1, ENTRY, 6)


def test_an_entry_larger_than_the_budget_is_not_kept():
    cache = TokenCountCache(max_bytes=ENTRY - 1)
    cache.put(key(1), 1)
    assert (len(cache), cache.get(key(1))) == (0, None)


def test_clear():
    cache = TokenCountCache()
    cache.put(key(1), 1)
    cache.get(key(1))
    cache.clear()
    assert (len(cache), cache.size_bytes, cache.hits, cache.misses) == (0, 0, 0, 0)


def test_concurrent_use_keeps_the_accounting_exact():
    cache = TokenCountCache(max_bytes=50 * ENTRY)
    errors = []

    def worker(offset):
        try:
            for i in range(2000):
                k = key((offset + i) % 120)
                if cache.get(k) is None:
                    cache.put(k, (offset + i) % 120)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n * 7,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache) == 50 and cache.size_bytes == 50 * ENTRY
    assert cache.hits + cache.misses == 16000


def message(text_value, timestamp=1):
    return t.decode_message({"role": "user", "content": [{"type": "text", "text": text_value}],
                             "timestamp": timestamp})


def test_a_message_is_counted_once_across_turns():
    shared = tokenizer_for_encoding("o200k_base")
    est = TokenizerEstimator(shared.encoding, TokenCountCache())
    history = [message(f"turn {i}: " + "some words " * i, timestamp=i) for i in range(10)]
    first = [est.message(m) for m in history]
    assert (est.cache.hits, est.cache.misses) == (0, 10)
    again = [est.message(dict(m)) for m in history]  # equal content, new dicts
    assert again == first
    assert (est.cache.hits, est.cache.misses) == (10, 10)


def test_entries_are_per_encoding_and_per_content():
    o200k = tokenizer_for_encoding("o200k_base")
    cl100k = tokenizer_for_encoding("cl100k_base")
    assert o200k.cache is cl100k.cache is SHARED_CACHE
    m = message("app-facing bookkeeping")
    assert (o200k.message(m), cl100k.message(m)) == (7, 8)
    assert (o200k.message(m), cl100k.message(m)) == (7, 8)
    assert o200k.message(message("app-facing bookkeeping!")) == 8


def test_long_texts_and_tools_are_cached_short_texts_are_not():
    shared = tokenizer_for_encoding("cl100k_base")
    est = TokenizerEstimator(shared.encoding, TokenCountCache())
    est.text("short")
    assert len(est.cache) == 0
    long_text = "a long system prompt. " * 20
    assert est.text(long_text) == est.text(long_text) == est.count(long_text)
    [tool] = t.decode_tools([{"name": "f", "description": "d"}])
    assert est.function(tool) == est.function(tool) == est.count('{"name":"f","description":"d","parameters":null}')
    assert (len(est.cache), est.cache.hits) == (2, 2)

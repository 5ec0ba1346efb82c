"""The byte-bounded LRU and the seen-keys set the memo, the token-count cache and the history
reader share."""

from __future__ import annotations

import random
from typing import Any

import pytest

from context_manager.wire.lru import ByteLRU, SeenKeys


def filled(max_bytes: int, *entries: tuple[str, int], **options: Any) -> ByteLRU[str, str]:
    lru: ByteLRU[str, str] = ByteLRU(max_bytes, **options)
    for key, cost in entries:
        assert lru.put(key, key.upper(), cost) is True
    return lru


def state(lru: ByteLRU[str, str]) -> tuple[list[str], int, int]:
    return list(lru.keys()), lru.size_bytes, len(lru)


def test_entries_are_kept_least_recently_used_first():
    lru = filled(100, ("a", 1), ("b", 2), ("c", 3))
    assert state(lru) == (["a", "b", "c"], 6, 3)
    assert list(lru.values()) == ["A", "B", "C"]


def test_get_reads_without_counting_as_a_use_and_move_to_end_marks_one():
    lru = filled(100, ("a", 1), ("b", 2), ("c", 3))
    assert (lru.get("a"), lru.get("zz"), lru.get("zz", "default")) == ("A", None, "default")
    assert list(lru.keys()) == ["a", "b", "c"]
    lru.move_to_end("a")
    assert list(lru.keys()) == ["b", "c", "a"]
    with pytest.raises(KeyError):
        lru.move_to_end("zz")


def test_the_least_recently_used_are_evicted_until_the_costs_fit():
    evicted: list[str] = []
    lru = filled(10, ("a", 3), ("b", 3), ("c", 3), on_evict=evicted.append)
    assert lru.put("d", "D", 7) is True  # 16 bytes: a and b go, c stays
    assert state(lru) == (["c", "d"], 10, 2)
    assert evicted == ["A", "B"]


def test_a_used_entry_outlives_older_unused_ones():
    evicted: list[str] = []
    lru = filled(9, ("a", 3), ("b", 3), ("c", 3), on_evict=evicted.append)
    lru.move_to_end("a")
    lru.put("d", "D", 3)
    assert state(lru) == (["c", "a", "d"], 9, 3)
    assert evicted == ["B"]


def test_an_entry_costing_the_whole_budget_evicts_every_other():
    evicted: list[str] = []
    lru = filled(10, ("a", 4), ("b", 4), on_evict=evicted.append)
    assert lru.put("c", "C", 10) is True
    assert state(lru) == (["c"], 10, 1)
    assert evicted == ["A", "B"]


def test_the_per_entry_limit_defaults_to_the_budget():
    lru = filled(10, ("a", 4))
    assert (lru.max_bytes, lru.max_entry_bytes) == (10, 10)
    assert (lru.admits(10), lru.admits(11)) == (True, False)
    assert lru.put("big", "BIG", 11) is False
    assert state(lru) == (["a"], 4, 1)


def test_a_costlier_entry_than_the_per_entry_limit_is_refused_and_changes_nothing():
    evicted: list[str] = []
    lru = filled(100, ("a", 4), ("b", 4), max_entry_bytes=30, on_evict=evicted.append)
    assert (lru.admits(30), lru.admits(31)) == (True, False)
    assert lru.put("a", "other", 31) is False  # the entry under that key stays where it was
    assert lru.put("c", "C", 31) is False
    assert state(lru) == (["a", "b"], 8, 2)
    assert (lru.get("a"), evicted) == ("A", [])
    assert lru.put("c", "C", 30) is True


def test_the_per_entry_limit_never_exceeds_the_budget():
    assert ByteLRU(10, max_entry_bytes=50).max_entry_bytes == 10
    assert ByteLRU(50, max_entry_bytes=10).max_entry_bytes == 10


def test_a_put_under_a_present_key_replaces_the_entry_as_the_most_recent():
    evicted: list[str] = []
    lru = filled(100, ("a", 4), ("b", 4), on_evict=evicted.append)
    assert lru.put("a", "A2", 6) is True
    assert state(lru) == (["b", "a"], 10, 2)
    assert (lru.get("a"), evicted) == ("A2", ["A"])


def test_a_replacement_that_grows_evicts_others():
    evicted: list[str] = []
    lru = filled(10, ("a", 4), ("b", 4), on_evict=evicted.append)
    lru.put("b", "B2", 8)
    assert state(lru) == (["b"], 8, 1)
    assert evicted == ["B", "A"]  # the replaced value, then the evicted one


def test_pop_removes_an_entry_without_the_callback():
    evicted: list[str] = []
    lru = filled(100, ("a", 4), ("b", 5), on_evict=evicted.append)
    assert lru.pop("a") == "A"
    assert (lru.pop("a"), lru.pop("zz", "default")) == (None, "default")
    assert state(lru) == (["b"], 5, 1)
    assert ("a" in lru, "b" in lru, evicted) == (False, True, [])


def test_clear_forgets_everything_without_the_callback_and_stays_usable():
    evicted: list[str] = []
    lru = filled(10, ("a", 4), ("b", 4), on_evict=evicted.append)
    get, move_to_end = lru.get, lru.move_to_end  # hoisted, as the memo's hot loop does
    lru.clear()
    assert (state(lru), evicted) == (([], 0, 0), [])
    lru.put("c", "C", 3)
    lru.put("d", "D", 3)
    move_to_end("c")
    assert (get("c"), list(lru.keys()), lru.size_bytes) == ("C", ["d", "c"], 6)


def test_the_accounting_matches_a_plain_model_over_random_operations():
    rng = random.Random(20240611)
    lru: ByteLRU[int, int] = ByteLRU(60, max_entry_bytes=25)
    model: list[tuple[int, int, int]] = []  # (key, value, cost), least recently used first
    for step in range(5000):
        key = rng.randrange(20)
        found = [i for i, item in enumerate(model) if item[0] == key]
        operation = rng.random()
        if operation < 0.5:
            cost = rng.randrange(0, 30)
            stored = lru.put(key, step, cost)
            assert stored is (cost <= 25)
            if stored:
                model = [item for item in model if item[0] != key] + [(key, step, cost)]
                while sum(item[2] for item in model) > 60:
                    model.pop(0)
        elif operation < 0.8:
            assert lru.get(key) == (model[found[0]][1] if found else None)
            if found:
                lru.move_to_end(key)
                model.append(model.pop(found[0]))
        else:
            assert lru.pop(key) == (model.pop(found[0])[1] if found else None)
        assert list(lru.keys()) == [item[0] for item in model]
        assert list(lru.values()) == [item[1] for item in model]
        assert lru.size_bytes == sum(item[2] for item in model)


def test_seen_keys_are_all_forgotten_once_full():
    seen: SeenKeys[str, object] = SeenKeys(3)
    for key in "abc":
        seen.note(key, None)
    seen["b"] = "refused"  # a plain assignment marks a key without the bound
    assert seen == {"a": None, "b": "refused", "c": None}
    seen.note("d", None)
    assert (seen, seen.max_keys) == ({"d": None}, 3)


def test_seen_keys_count_a_key_noted_again_like_a_new_one():
    seen: SeenKeys[str, None] = SeenKeys(2)
    seen.note("a", None)
    seen.note("b", None)
    seen.note("a", None)
    assert seen == {"a": None}

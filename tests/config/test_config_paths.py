"""``lease_dir`` resolution (spec 04 §2.3) with HOME, III_COMPOSE_DIR and the cwd controlled."""

from __future__ import annotations

import pytest

from context_manager.config.paths import resolve_lease_dir

ENV = {"HOME": "/home/u", "III_COMPOSE_DIR": "/workspace/project"}


def cwd() -> str:
    return "/worker"


@pytest.mark.parametrize("configured,env,expected", [
    ("data/context-manager", ENV, "/workspace/project/data/context-manager"),
    ("./data/context-manager", ENV, "/workspace/project/data/context-manager"),
    ("/var/lib/iii/leases", ENV, "/var/lib/iii/leases"),
    ("~/.iii/data/context-manager", ENV, "/home/u/.iii/data/context-manager"),
    ("~", ENV, "/home/u"),
    ("data/context-manager", {"HOME": "/home/u"}, "/worker/data/context-manager"),
    ("data/context-manager", {"HOME": "/home/u", "III_COMPOSE_DIR": ""}, "/worker/data/context-manager"),
    ("~", {"III_COMPOSE_DIR": "/workspace/project"}, "~"),
    ("~/x", {"III_COMPOSE_DIR": "/workspace/project"}, "/workspace/project/~/x"),
    ("", ENV, "/workspace/project"),
])
def test_worked_examples(configured, env, expected):
    assert resolve_lease_dir(configured, env, cwd) == expected


@pytest.mark.parametrize("configured,env,expected", [
    ("~/", ENV, "/home/u"),
    ("~", {"HOME": "", "USERPROFILE": "/c/Users/u"}, "/c/Users/u"),
    ("~/x", {"USERPROFILE": "/c/Users/u"}, "/c/Users/u/x"),
    ("~/x", {"HOME": "", "III_COMPOSE_DIR": "/p"}, "/p/~/x"),
    ("~user/x", ENV, "/workspace/project/~user/x"),
    ("a/~/b", ENV, "/workspace/project/a/~/b"),
    ("./a/./b", ENV, "/workspace/project/a/b"),
    ("a/../b", ENV, "/workspace/project/a/../b"),
    ("a//b/", ENV, "/workspace/project/a/b"),
    ("/", ENV, "/"),
    ("/var/./x", ENV, "/var/./x"),
    ("~/.", ENV, "/home/u"),
    ("~", {"HOME": "/home/u/"}, "/home/u/"),
    ("", {}, "/worker"),
])
def test_path_rules(configured, env, expected):
    assert resolve_lease_dir(configured, env, cwd) == expected


def test_unreadable_cwd_leaves_the_path_relative():
    assert resolve_lease_dir("./data/x", {}, lambda: None) == "data/x"


def test_process_environment_and_cwd_by_default(monkeypatch, tmp_path):
    monkeypatch.setenv("III_COMPOSE_DIR", "")
    monkeypatch.chdir(tmp_path)
    assert resolve_lease_dir("data/context-manager") == f"{tmp_path}/data/context-manager"
    monkeypatch.setenv("III_COMPOSE_DIR", "/srv/p")
    assert resolve_lease_dir("data/context-manager") == "/srv/p/data/context-manager"

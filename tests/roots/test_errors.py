"""One root: every exception the library raises is a ``context_manager.Error``, and keeps the base
it had before the root existed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import context_manager
from context_manager import CallError, ConfigError, Error, UnknownFunction, call

# Control flow inside one function, never raised past it.
PRIVATE = {"context_manager.engine.history_reader._NotFound"}


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(context_manager.__path__, "context_manager."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


def test_every_exception_class_of_the_package_is_an_error():
    classes = _exception_classes()
    assert len(classes) >= 20  # the walk reached the package's modules
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, Error) and name not in PRIVATE)
    assert outside == []


@pytest.mark.parametrize(("cls", "old_base"), [
    (ConfigError, ValueError),
    (UnknownFunction, LookupError),
    (CallError, Exception),
])
def test_each_class_keeps_its_former_base(cls, old_base):
    assert issubclass(cls, Error) and issubclass(cls, old_base)


def _payload(**extra):
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
            "model": {"id": "m", "limits": {"context_window": 1000, "max_output_tokens": 100}}, **extra}


@pytest.mark.parametrize(("function_id", "payload", "config", "kind", "text"), [
    ("context::nope", {}, None, UnknownFunction, "context::nope"),
    ("context::count-tokens", {}, {"tail_turns": "three"}, ConfigError,
     "json parse: invalid type: string \"three\", expected usize"),
    ("context::assemble", {"messages": 3}, None, CallError,
     "serialization error: invalid type: integer `3`, expected a sequence"),
    ("context::assemble", {"model": {"id": "m", "limits": {"context_window": 1000, "max_output_tokens": 100}}},
     None, CallError, "handler error: context/invalid_request: messages is required"),
    ("context::assemble", _payload(messages=[{"role": "user", "content": [{"type": "text", "text": "x" * 9000}],
                                               "timestamp": 1}]), None, CallError,
     "handler error: context/overflow: assembled context requires 2266 tokens but usable budget is 800"),
])
def test_except_error_catches_every_kind_a_call_raises(function_id, payload, config, kind, text):
    with pytest.raises(Error) as caught:
        call(function_id, payload, config=config)
    assert type(caught.value) is kind
    assert str(caught.value) == text

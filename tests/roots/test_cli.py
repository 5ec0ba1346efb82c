"""The standalone `call` command: exact stdout, error objects on stderr, exit statuses."""

import json
import logging
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each test starts `python -m context_manager`

HELLO = {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}


def run(args, stdin: bytes = b""):
    return subprocess.run([sys.executable, "-m", "context_manager", *args], input=stdin,
                          capture_output=True, timeout=60)


def test_count_tokens_prints_the_exact_wire_json():
    proc = run(["call", "context::count-tokens"], json.dumps({"model": {"id": "m"}, "messages": [HELLO]}).encode())
    assert proc.returncode == 0
    assert proc.stdout == b'{"by_role":{"assistant":0,"custom":0,"function_result":0,"user":18},"estimator":"heuristic","tokens":18}\n'


def test_input_file_is_read_instead_of_stdin(tmp_path):
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": {"id": "m"}, "messages": []}))
    proc = run(["call", "context::count-tokens", "--input", str(path)])
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["tokens"] == 0


@pytest.mark.parametrize(
    "stdin, message",
    [
        (b"{not json", None),
        (b"", None),
        (json.dumps({"messages": []}).encode(), "serialization error: missing field `model`"),
        (json.dumps({"model": {"id": "m"}, "messages": [{"role": "wizard"}]}).encode(),
         "serialization error: unknown variant `wizard`, expected one of `user`, `assistant`, `function_result`, `custom`"),
        (json.dumps({"model": {"id": "m"}, "messages": [{**HELLO, "timestamp": "1"}]}).encode(),
         'serialization error: invalid type: string "1", expected i64'),
        (json.dumps({"model": {"id": "m"}}).encode(), "handler error: context/invalid_request: messages is required"),
    ],
)
def test_failures_print_one_error_object_and_exit_1(stdin, message):
    proc = run(["call", "context::count-tokens"], stdin)
    assert proc.returncode == 1
    assert proc.stdout == b""
    lines = proc.stderr.decode().strip().splitlines()
    error = json.loads(lines[-1])
    assert set(error) == {"code", "message"}
    assert error["code"] == "invocation_failed"
    if message is None:
        assert error["message"].startswith("serialization error: ")
    else:
        assert error["message"] == message
    assert "Traceback" not in proc.stderr.decode()


def test_usage_errors_exit_2():
    assert run(["call", "context::nope"], b"{}").returncode == 2
    assert run(["call"], b"{}").returncode == 2
    assert run(["call", "context::count-tokens", "--input", "/nonexistent/file.json"]).returncode == 2


def test_config_file_is_applied_and_an_invalid_one_is_a_usage_error(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("max_result_tokens: 0\ntail_turns: 3\n")
    proc = run(["call", "context::count-tokens", "--config", str(good)],
               json.dumps({"model": {"id": "m"}, "messages": [HELLO]}).encode())
    assert proc.returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("tail_turns: yes\n")
    proc = run(["call", "context::count-tokens", "--config", str(bad)], b"{}")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("context-manager: yaml parse: ")


def test_library_call_rejects_an_invalid_config_with_value_error():
    from context_manager import call

    with pytest.raises(ValueError, match="unknown field `bad`"):
        call("context::count-tokens", {"model": {"id": "m"}, "messages": []}, config={"bad": 1})


async def _async_kaput(payload, ctx):
    raise RuntimeError("kaput")


def test_library_call_answers_a_defect_with_internal_error_and_logs_it_once(monkeypatch, caplog):
    from context_manager import CallError, call
    from context_manager.handlers.registry import FUNCTIONS

    monkeypatch.setitem(FUNCTIONS, "context::count-tokens", _async_kaput)
    with caplog.at_level(logging.ERROR), pytest.raises(CallError) as info:
        call("context::count-tokens", {"model": {"id": "m"}, "messages": []})
    assert info.value.to_dict() == {"code": "invocation_failed", "message": "internal error: kaput"}
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR] == [
        ("context_manager", "unexpected failure in context::count-tokens")
    ]


def test_call_command_answers_a_defect_with_internal_error_and_logs_it_once(monkeypatch, caplog, capsysbinary, tmp_path):
    from context_manager.cli import run_call
    from context_manager.handlers.registry import FUNCTIONS

    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": {"id": "m"}, "messages": []}))
    monkeypatch.setitem(FUNCTIONS, "context::count-tokens", _async_kaput)
    with caplog.at_level(logging.ERROR):
        assert run_call(["context::count-tokens", "--input", str(path)]) == 1
    out, err = capsysbinary.readouterr()
    assert (out, err) == (b"", b'{"code":"invocation_failed","message":"internal error: kaput"}\n')
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR] == [
        ("context_manager", "unexpected failure")
    ]


def test_help_lists_every_command_on_one_line_each():
    proc = run(["--help"])
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    start = lines.index("commands:")
    assert lines[start:start + 5] == [
        "commands:",
        "  context-manager [options]           run the worker against an iii engine",
        "  context-manager --manifest          print the worker manifest JSON and exit",
        "  context-manager call <function_id>  one call in-process: JSON stdin to stdout",
        "",
    ]
    assert lines[start + 5] == "options:"
    for flag in ("--url URL", "--config FILE", "--manifest", "--processes N"):
        assert any(line.startswith(f"  {flag} ") for line in lines), flag


def test_call_help_lists_the_function_ids():
    proc = run(["call", "--help"])
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "usage: context-manager call [-h] [--input FILE] [--config FILE] function_id"
    start = lines.index("function ids:")
    assert lines[start + 1:] == [
        "  context::count-tokens",
        "  context::prune",
        "  context::assemble",
        "  context::compact",
        "  context::on-models-changed",
        "  context::on-config-change",
        "  context-manager::ui-content",
        "  context::policy::publish",
        "  context::policy::list",
        "  context::policy::activate",
        "  context::policy::withdraw",
        "  context::policy::resolve",
        "  context::policy::scopes",
    ]

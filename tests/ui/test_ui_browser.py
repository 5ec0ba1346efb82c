"""The console form in a real browser: headless Chromium renders ``ui/page.js`` with the pinned
React (``tests/ui/browser/package.json``) and a stub of the console component module, the test
edits every field through the DOM, and each proposed value must be one the worker's config
parser accepts, holding exactly the edit. The retention policy editor must report a draft's fault
in the worker's own words and propose only a policy the worker accepts. Screenshots are saved to
``tests/artifacts/``.

Needs Debian's ``chromium`` and ``npm install`` in ``tests/ui/browser`` (``.ci/run`` does both);
without Chromium the module skips, saying why.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from context_manager.config.parse import ConfigError, parse_config_value
from context_manager.config.retention import PolicyError, parse_retention
from context_manager.core.settings import DEFAULT_CONFIG, PROFILE_KEYS, ModelChoice, WorkerConfig

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BROWSER_DIR = ROOT / "tests" / "ui" / "browser"
UI_DIR = ROOT / "src" / "context_manager" / "ui"
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS_DIR", ROOT / "tests" / "artifacts"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REACT_UMD = BROWSER_DIR / "node_modules" / "react" / "umd" / "react.development.js"
# With UPDATE_SCREENSHOTS=1 the custom form's screenshot also replaces the one docs/console.md shows.
DOCS_SCREENSHOT = ROOT / "docs" / "images" / "console-form.png"
DOCS_POLICIES_SCREENSHOT = ROOT / "docs" / "images" / "console-policies.png"
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"

if CHROMIUM is None:
    pytest.skip("Chromium is not installed (apt-get install -y chromium); the form is checked in a "
                "browser only where it is", allow_module_level=True)

NUMBER_KEYS = ["reserved_tokens_cap", "reserved_pct", "protect_recent_tokens", "decay_user_turns",
               "protected_user_turns", "min_free_tokens", "max_output_chars", "max_result_tokens",
               "tail_turns", "lease_ttl_secs", "summarizer_timeout_ms", "session_ttl_secs",
               "anchor_messages", "max_history_tokens"]
# Number keys off by default (null): an empty field shows what decides instead.
NULL_NUMBER_PLACEHOLDERS = {"max_history_tokens": "the window"}
# Switch key -> (the value its "on" proposes, the value its "off" proposes).
SWITCHES = {
    "allow_fallback_limits": (True, False),
    "overflow_fallback": ("drop_oldest", "error"),
    "estimator": ("auto", "heuristic"),
    "user_less_compaction": (True, False),
    "summary_check": ("append", "off"),
    "summarizer_fallback": ("extractive", "none"),
    "working_set": (True, False),
    "report_prefix": (True, False),
    "summary_reuse": (True, False),
    "summary_placement": ("message", "system_prompt"),
    "count_calibration": ("usage", "off"),
    "lease_store": ("state", "file"),
    "session_store": ("state", "memory"),
    "summarizer_request": ("conversation", "rendered"),
}
# Fractions of the usable budget in (0, 1]; an empty field drops the key (eager_compaction_at: null).
FRACTION_KEYS = ["reduce_to", "eager_compaction_at", "compact_ahead_at"]
FRACTION_PLACEHOLDERS = {"reduce_to": "1", "eager_compaction_at": "off", "compact_ahead_at": "off"}
# Free-text fields: a path, and a list of names written comma-separated.
TEXT_KEYS = ["lease_dir", "plan_functions", "policy_write_token"]
# A policy touching every part: rules tried in order, a default, errors, prose, reasoning, media.
POLICY: dict[str, Any] = {
    "verbatim_turns": 2,
    "tools": {
        "rules": [
            {"function": "fs::read*", "result": {"mode": "over", "over": 4000, "to": 1000, "keep": "head"}},
            {"function": "shell::[a-z]*", "arguments": {"mode": "always", "to": 200}, "result": {"mode": "keep"}},
            {"function": "*", "result": {"mode": "always", "to": 300, "keep": "tail"}},
        ],
        "default": {"arguments": {"mode": "over", "over": 1500, "to": 500}},
        "errors": {"mode": "keep"},
        "mark_truncations": False,
    },
    "text": {"prompt": {"mode": "over", "over": 3000, "to": 1000},
             "message": {"mode": "always", "to": 800, "keep": "head"}},
    "reasoning": {"keep_turns": 1},
    "media": {"default_keep_turns": 2, "rules": [{"mime": "image/png", "keep_turns": 0}]},
}
POLICY_RULE_LINES = [
    "1. fs::read*: result over 4,000 tokens cut to 1,000 (head)",
    "2. shell::[a-z]*: arguments cut to 200 tokens (head and tail); result kept whole",
    "3. *: result cut to 300 tokens (tail)",
    "otherwise: arguments over 1,500 tokens cut to 500 (head and tail)",
    "error results: kept whole",
]
# A smaller valid policy, typed into the editor.
TYPED_POLICY: dict[str, Any] = {
    "tools": {"rules": [{"function": "grep", "result": {"mode": "always", "to": 100}},
                        {"function": "read_*", "arguments": {"mode": "keep"}}],
              "errors": {"mode": "over", "over": 50, "to": 20, "keep": "tail"}},
    "reasoning": {"keep_turns": 0},
    "media": {"rules": [{"mime": "image/*", "keep_turns": 1}]},
}
TYPED_POLICY_RULE_LINES = [
    "1. grep: result cut to 100 tokens (head and tail)",
    "2. read_*: arguments kept whole",
    "error results: over 50 tokens cut to 20 (tail)",
]
# Policies the worker rejects, one fault each.
BAD_POLICIES = {
    "unknown member": {"tools": {"rules": [], "order": "first"}},
    "to above over": {"tools": {"rules": [{"function": "grep", "result": {"mode": "over", "over": 500, "to": 600}}]}},
    "unclosed glob": {"tools": {"rules": [{"function": "fs::[read", "result": {"mode": "keep"}}]}},
    "stray bracket": {"tools": {"rules": [{"function": "fs::]", "result": {"mode": "keep"}}]}},
    "negative number": {"text": {"prompt": {"mode": "always", "to": -5}}},
    "negative keep_turns": {"reasoning": {"keep_turns": -1}},
    "malformed mime": {"media": {"rules": [{"mime": "png", "keep_turns": 1}]}},
    "unknown mode": {"text": {"message": {"mode": "sometimes"}}},
    "not an object": [1, 2],
}
CUSTOM = {"reserved_tokens_cap": 15000, "reserved_pct": 12, "tail_turns": 4, "lease_dir": "/var/leases",
          "allow_fallback_limits": False, "overflow_fallback": "drop_oldest", "estimator": "auto",
          "user_less_compaction": False, "anchor_messages": 2, "summary_check": "append",
          "summarizer_fallback": "extractive", "report_prefix": True, "summary_placement": "message",
          "reduce_to": 0.75, "eager_compaction_at": 0.9, "retention": POLICY}


class _Assets(http.server.SimpleHTTPRequestHandler):
    """/npm/* from tests/ui/browser/node_modules, /page/* from the package's ui/, the rest from
    tests/ui/browser."""

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0]
        if path.startswith("/npm/"):
            return str(BROWSER_DIR / "node_modules" / path[len("/npm/"):])
        if path.startswith("/page/"):
            return str(UI_DIR / path[len("/page/"):])
        return str(BROWSER_DIR / path.lstrip("/"))

    def log_message(self, *args: object) -> None:
        pass


class Browser:
    """Chromium driven over the DevTools protocol: one page, commands answered in order."""

    def __init__(self, url: str, profile: str) -> None:
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={profile}", "--window-size=960,2400", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.ws_url = self._devtools_url()
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(self.ws_url, max_size=64 * 1024 * 1024, open_timeout=20))
        self._ids = itertools.count(1)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_for("window.__ready === true")

    def _devtools_url(self) -> str:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            lines.append(line)
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # keep the pipe drained
                return match.group(1)
        raise AssertionError("Chromium did not start: " + "".join(lines))

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv(timeout=30))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if reply.get("method") == "Runtime.exceptionThrown":
                raise AssertionError(f"page error: {reply['params']['exceptionDetails']}")

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not self.js(f"Boolean({condition})"):
            if time.monotonic() > deadline:
                raise AssertionError(f"not true in time: {condition}")
            time.sleep(0.05)

    def screenshot(self, path: Path, clip: dict[str, Any] | None = None) -> None:
        if clip is None:
            height = self.js("Math.ceil(document.getElementById('root').getBoundingClientRect().bottom) + 24")
            clip = {"x": 0, "y": 0, "width": 960, "height": height, "scale": 1}
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip},
                         session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert REACT_UMD.is_file(), "run `npm ci` in tests/ui/browser first (.ci/run does)"
    handler = functools.partial(_Assets, directory=str(BROWSER_DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tempfile.mkdtemp(prefix="cm-chromium-")
    chromium = Browser(f"http://127.0.0.1:{server.server_address[1]}/index.html", profile)
    try:
        yield chromium
    finally:
        chromium.close()
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)


def show(browser: Browser, value: dict[str, Any]) -> None:
    browser.js(f"window.__show({json.dumps(value)})")
    browser.wait_for("document.querySelector('[data-field=\"lease_dir\"]') !== null")


def controls(browser: Browser) -> dict[str, Any]:
    """What each field shows: a number/text input's or the policy editor's text, a switch's state,
    the profile selector's choice."""
    return browser.js("""Object.fromEntries([...document.querySelectorAll('[data-field]')].map((row) => {
        const input = row.querySelector('input, textarea, select')
        return [row.dataset.field, input.type === 'checkbox' ? input.checked : input.value]
    }))""")


def type_into(browser: Browser, key: str, text: str) -> None:
    # The native setter, then a real input event: how a keystroke reaches a React-controlled input.
    browser.js(f"""(() => {{
        const input = document.getElementById('context-manager-cfg-{key}')
        input.focus()
        const prototype = input instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype
        Object.getOwnPropertyDescriptor(prototype, 'value').set.call(input, {json.dumps(text)})
        input.dispatchEvent(new Event('input', {{ bubbles: true }}))
    }})()""")


def choose(browser: Browser, key: str, option: str) -> None:
    # The native setter, then a real change event: how a choice reaches a React-controlled select.
    browser.js(f"""(() => {{
        const select = document.getElementById('context-manager-cfg-{key}')
        Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(select, {json.dumps(option)})
        select.dispatchEvent(new Event('change', {{ bubbles: true }}))
    }})()""")


def policy_fault(browser: Browser) -> str:
    return browser.js("document.getElementById('context-manager-cfg-retention-problem').textContent")


def rule_lines(browser: Browser) -> list[str]:
    return browser.js("[...document.querySelectorAll('.ctx-cfg-rules li')].map((li) => li.textContent)")


def worker_fault(policy: Any) -> str:
    """The fault the worker's parser reports for ``policy``; its config parse must reject it too."""
    with pytest.raises(PolicyError) as fault:
        parse_retention(policy)
    with pytest.raises(ConfigError, match=re.escape(str(fault.value))):
        parse_config_value({"retention": policy})
    return str(fault.value)


def click(browser: Browser, key: str) -> None:
    browser.js(f"document.getElementById('context-manager-cfg-{key}').click()")


def last_proposal(browser: Browser) -> Any:
    proposals = browser.js("window.__proposals")
    assert proposals, "the form proposed nothing"
    return proposals[-1]


def test_the_default_form_renders_every_key_with_its_default(browser: Browser) -> None:
    show(browser, {})
    assert browser.js("window.__families") == ["context-manager"]
    shown = controls(browser)
    assert set(shown) == set(WorkerConfig.key_names())
    assert set(shown) == {*NUMBER_KEYS, *FRACTION_KEYS, *SWITCHES, *TEXT_KEYS, "retention", "profile",
                          "summarizer_model", "compaction_instructions"}
    assert shown["profile"] == "faithful"
    assert (shown["summarizer_model"], shown["compaction_instructions"]) == ("", "")
    # Empty: the default applies (for the policy: none).
    assert {k: shown[k] for k in [*NUMBER_KEYS, *FRACTION_KEYS, *TEXT_KEYS, "retention"]} == {
        k: "" for k in [*NUMBER_KEYS, *FRACTION_KEYS, *TEXT_KEYS, "retention"]}
    placeholders = browser.js("""Object.fromEntries([...document.querySelectorAll('input[type=number]')]
        .map((input) => [input.closest('[data-field]').dataset.field, input.placeholder]))""")
    assert placeholders == {**{k: str(getattr(DEFAULT_CONFIG, k)) for k in NUMBER_KEYS},
                            **NULL_NUMBER_PLACEHOLDERS, **FRACTION_PLACEHOLDERS}
    assert DEFAULT_CONFIG.reduce_to == 1.0 and DEFAULT_CONFIG.eager_compaction_at is None
    assert {k: shown[k] for k in SWITCHES} == {k: SWITCHES[k][0] == getattr(DEFAULT_CONFIG, k) for k in SWITCHES}
    assert policy_fault(browser) == "" and rule_lines(browser) == []
    # The page's stylesheet applies (the harness wraps the form as the console does).
    assert browser.js("getComputedStyle(document.querySelector('.ctx-cfg-rules')).listStyleType") == "none"
    sections = browser.js("[...document.querySelectorAll('section h2')].map((h) => h.textContent)")
    assert sections == ["Profile", "Budget defaults", "Pruning and compaction", "Runtime", "Overflow and counting",
                        "Task retention", "Cache-aware reduction", "Retention policy", "Other settings"]
    browser.screenshot(ARTIFACTS / "console-form-default.png")


def test_a_custom_configuration_is_shown_as_stored(browser: Browser) -> None:
    show(browser, CUSTOM)
    shown = controls(browser)
    assert shown["reserved_tokens_cap"] == "15000" and shown["reserved_pct"] == "12" and shown["tail_turns"] == "4"
    assert shown["anchor_messages"] == "2" and shown["lease_dir"] == "/var/leases"
    assert shown["max_result_tokens"] == ""
    assert shown["reduce_to"] == "0.75" and shown["eager_compaction_at"] == "0.9"
    assert {k: shown[k] for k in SWITCHES} == {
        k: CUSTOM.get(k, getattr(DEFAULT_CONFIG, k)) == SWITCHES[k][0] for k in SWITCHES}
    assert shown["summary_reuse"] is False  # not stored: the default (off) is shown
    # The editor holds the policy's JSON, two-space indented, members in stored order.
    assert shown["retention"] == json.dumps(POLICY, indent=2)
    assert rule_lines(browser) == POLICY_RULE_LINES
    assert policy_fault(browser) == ""
    assert parse_config_value(CUSTOM).retention == parse_retention(POLICY)
    browser.screenshot(ARTIFACTS / "console-form-custom.png")
    if UPDATE_SCREENSHOTS:
        browser.screenshot(DOCS_SCREENSHOT)
    browser.screenshot(ARTIFACTS / "console-form-retention.png", clip=browser.js("""(() => {
        const section = [...document.querySelectorAll('section')]
            .find((s) => s.querySelector('h2').textContent === 'Retention policy')
        const box = section.getBoundingClientRect()
        return { x: 0, y: Math.floor(box.top + window.scrollY) - 8, width: 960, height: Math.ceil(box.height) + 16, scale: 1 }
    })()"""))


@pytest.mark.parametrize("key", NUMBER_KEYS)
def test_typing_a_number_proposes_a_value_the_parser_accepts(browser: Browser, key: str) -> None:
    show(browser, CUSTOM)
    type_into(browser, key, "3")
    proposal = last_proposal(browser)
    assert proposal == {**CUSTOM, key: 3}
    assert parse_config_value(proposal) == replace(parse_config_value(CUSTOM), **{key: 3})
    type_into(browser, key, "")  # cleared: the key goes, so the default applies
    cleared = last_proposal(browser)
    assert key not in cleared and parse_config_value(cleared) == replace(
        parse_config_value(CUSTOM), **{key: getattr(DEFAULT_CONFIG, key)})


@pytest.mark.parametrize("key", FRACTION_KEYS)
def test_typing_a_fraction_proposes_a_value_the_parser_accepts(browser: Browser, key: str) -> None:
    show(browser, CUSTOM)
    for text, fraction in (("0.5", 0.5), ("1", 1), ("0.05", 0.05)):
        type_into(browser, key, text)
        proposal = last_proposal(browser)
        assert proposal == {**CUSTOM, key: fraction}
        assert parse_config_value(proposal) == replace(parse_config_value(CUSTOM), **{key: fraction})
    type_into(browser, key, "")  # cleared: the key goes (eager_compaction_at: null, compact only when over)
    cleared = last_proposal(browser)
    assert key not in cleared and parse_config_value(cleared) == replace(
        parse_config_value(CUSTOM), **{key: getattr(DEFAULT_CONFIG, key)})


@pytest.mark.parametrize("key", FRACTION_KEYS)
def test_rejected_fractions_propose_nothing(browser: Browser, key: str) -> None:
    show(browser, {})
    for text in ("0", "1.5", "-0.5", "1.0001"):
        type_into(browser, key, text)
        with pytest.raises(ConfigError):
            parse_config_value({key: float(text)})  # the parser refuses each too
    assert browser.js("window.__proposals") == []


def test_rejected_numbers_propose_nothing(browser: Browser) -> None:
    show(browser, {})
    for text in ("-1", "1.5", "9007199254740992"):
        type_into(browser, "tail_turns", text)
    assert browser.js("window.__proposals") == []


@pytest.mark.parametrize("key", sorted(SWITCHES))
def test_each_switch_proposes_both_of_its_values(browser: Browser, key: str) -> None:
    on, off = SWITCHES[key]
    show(browser, {})
    click(browser, key)
    first = last_proposal(browser)
    expected = off if getattr(DEFAULT_CONFIG, key) == on else on
    assert first == {key: expected}
    assert getattr(parse_config_value(first), key) == expected
    click(browser, key)
    second = last_proposal(browser)
    assert second == {key: getattr(DEFAULT_CONFIG, key)}
    assert parse_config_value(second) == DEFAULT_CONFIG


def test_the_plan_functions_are_proposed_as_a_list(browser: Browser) -> None:
    show(browser, {"tail_turns": 5})
    type_into(browser, "plan_functions", "[]")
    assert last_proposal(browser) == {"tail_turns": 5, "plan_functions": []}
    assert parse_config_value(last_proposal(browser)).plan_functions == ()
    type_into(browser, "plan_functions", "")
    assert last_proposal(browser) == {"tail_turns": 5}
    show(browser, {"plan_functions": ["update_plan"]})
    assert controls(browser)["plan_functions"] == "update_plan"


def test_the_lease_directory_is_proposed_as_typed(browser: Browser) -> None:
    show(browser, {"tail_turns": 5})
    type_into(browser, "lease_dir", "~/leases")
    proposal = last_proposal(browser)
    assert proposal == {"tail_turns": 5, "lease_dir": "~/leases"}
    assert parse_config_value(proposal).lease_dir == "~/leases"


def test_typing_a_valid_policy_proposes_exactly_that_policy(browser: Browser) -> None:
    show(browser, {"tail_turns": 5})
    type_into(browser, "retention", json.dumps(TYPED_POLICY, indent=1))
    proposal = last_proposal(browser)
    assert proposal == {"tail_turns": 5, "retention": TYPED_POLICY}
    config = parse_config_value(proposal)
    assert config.retention == parse_retention(TYPED_POLICY) and config.retention is not None
    assert config.retention.to_json() == parse_retention(config.retention.to_json()).to_json()
    assert policy_fault(browser) == ""
    assert rule_lines(browser) == TYPED_POLICY_RULE_LINES
    # The host now holds the policy: the editor shows it as stored.
    assert controls(browser)["retention"] == json.dumps(TYPED_POLICY, indent=2)
    type_into(browser, "retention", "  \n")  # emptied: the key goes, no policy applies
    emptied = last_proposal(browser)
    assert emptied == {"tail_turns": 5} and parse_config_value(emptied).retention is None
    assert rule_lines(browser) == []


@pytest.mark.parametrize("case", sorted(BAD_POLICIES))
def test_an_invalid_policy_shows_the_workers_fault_and_proposes_nothing(browser: Browser, case: str) -> None:
    show(browser, {"retention": TYPED_POLICY})
    typed = json.dumps(BAD_POLICIES[case], indent=2)
    type_into(browser, "retention", typed)
    assert policy_fault(browser) == worker_fault(BAD_POLICIES[case])
    assert browser.js("window.__proposals") == []
    # The draft stays in the editor, marked invalid; the stored policy's rules are still listed.
    assert controls(browser)["retention"] == typed
    assert browser.js("document.getElementById('context-manager-cfg-retention').getAttribute('aria-invalid')") == "true"
    assert rule_lines(browser) == TYPED_POLICY_RULE_LINES


def test_text_that_is_not_json_proposes_nothing(browser: Browser) -> None:
    show(browser, {})
    type_into(browser, "retention", '{"tools": ')
    assert policy_fault(browser).startswith("retention: not JSON (")
    assert browser.js("window.__proposals") == []
    type_into(browser, "retention", json.dumps(TYPED_POLICY))  # fixed: the fault clears, the policy goes
    assert policy_fault(browser) == "" and last_proposal(browser) == {"retention": TYPED_POLICY}


def test_every_field_edited_in_turn_builds_one_valid_value(browser: Browser) -> None:
    show(browser, {})
    for number, key in enumerate(NUMBER_KEYS, start=1):
        type_into(browser, key, str(number))
    type_into(browser, "reduce_to", "0.5")
    type_into(browser, "eager_compaction_at", "0.8")
    type_into(browser, "compact_ahead_at", "0.6")
    for key in SWITCHES:
        click(browser, key)
    type_into(browser, "lease_dir", "leases")
    type_into(browser, "plan_functions", "TodoWrite, my_plan ,, TodoWrite")
    type_into(browser, "policy_write_token", "s3cret")
    type_into(browser, "summarizer_model", "cheap-model")
    type_into(browser, "compaction_instructions", "Keep every file path.")
    type_into(browser, "retention", json.dumps(POLICY))
    choose(browser, "profile", "recommended")
    proposal = last_proposal(browser)
    config = parse_config_value(proposal)
    # Every key is set explicitly, so the profile implies nothing more.
    assert config == WorkerConfig(
        **{key: number for number, key in enumerate(NUMBER_KEYS, start=1)},
        **{key: (off if getattr(DEFAULT_CONFIG, key) == on else on) for key, (on, off) in SWITCHES.items()},
        reduce_to=0.5, eager_compaction_at=0.8, compact_ahead_at=0.6, lease_dir="leases",
        retention=parse_retention(POLICY), plan_functions=("TodoWrite", "my_plan"), policy_write_token="s3cret", profile="recommended",
        summarizer_model=ModelChoice("cheap-model"), compaction_instructions="Keep every file path.")
    assert proposal["retention"] == POLICY
    assert proposal["plan_functions"] == ["TodoWrite", "my_plan"]
    assert proposal["summarizer_model"] == {"id": "cheap-model"}
    assert set(proposal) == set(WorkerConfig.key_names())
    assert rule_lines(browser) == POLICY_RULE_LINES
    browser.screenshot(ARTIFACTS / "console-form-edited.png")


def test_choosing_the_recommended_profile_shows_what_it_implies(browser: Browser) -> None:
    show(browser, {})
    choose(browser, "profile", "recommended")
    assert last_proposal(browser) == {"profile": "recommended"}
    assert parse_config_value(last_proposal(browser)) == parse_config_value({"profile": "recommended"})
    show(browser, {"profile": "recommended"})
    shown = controls(browser)
    implied = {key for key in SWITCHES if key in PROFILE_KEYS["recommended"]}
    assert implied == {"summary_check", "summarizer_fallback", "working_set", "overflow_fallback", "summary_reuse",
                       "summarizer_request"}
    assert {key: shown[key] for key in SWITCHES} == {key: key in implied or getattr(DEFAULT_CONFIG, key) == SWITCHES[key][0]
                                                     for key in SWITCHES}
    placeholders = browser.js("""Object.fromEntries([...document.querySelectorAll('input[type=number]')]
        .map((input) => [input.closest('[data-field]').dataset.field, input.placeholder]))""")
    assert (placeholders["reduce_to"], placeholders["eager_compaction_at"]) == ("1", "0.8")
    # Turning an implied switch off overrides the profile for that key alone.
    click(browser, "working_set")
    assert last_proposal(browser) == {"profile": "recommended", "working_set": False}
    # Back to faithful: the profile key goes, the explicit value stays.
    choose(browser, "profile", "faithful")
    assert last_proposal(browser) == {"working_set": False}


# --- the Policies section: the form given the host's `invoke` -----------------------------------

CREATED = "2026-11-30T09:15:00.000Z"
STORE_FAULT = {"code": "context/policy_store", "message": "policy store failed, nothing changed: timed out"}
UNAUTHORIZED = {"code": "context/unauthorized", "message": "a valid token is required to change policies"}
NAMESPACE_FAULT = ("namespace: expected segments of 1 to 64 characters a-z, 0-9, _, - separated by /, "
                   "at most 255 characters")


def _version(version_id: str, version: int, active: bool, document: dict[str, Any]) -> dict[str, Any]:
    return {"id": version_id, "version": version, "is_active": active, "created_at": CREATED, "document": document}


def _policy(version_id: str, namespace: str | None, tagged: str | None, version: int) -> dict[str, Any]:
    return {"kind": "policy", "id": version_id, "namespace": namespace, "tagged_model": tagged, "version": version}


def _scope(surface: str, namespace: str | None, tag: str | None, latest: int, active: int | None) -> dict[str, Any]:
    return {"surface": surface, "namespace": namespace, "model_id": tag, "latest_version": latest,
            "active_version": active}


RESOLVED = {
    "namespace": "acme/proj-7", "model_id": "gpt-a", "config": {"reserved_pct": 30},
    "sources": {"budget": _policy("budget:acme:1:gpt-a", "acme", "gpt-a", 1),
                "retention": _policy("retention:acme/proj-7:1", "acme/proj-7", None, 1),
                "settings": {"kind": "worker_config"}},
    "warnings": [{"code": "context_budget_resolved_at", "namespace": "acme", "tagged_model": "gpt-a"},
                 {"code": "retention_policy_overridden", "displaced": None, "namespace": "acme/proj-7"}],
}
# [function id, request, {result} | {error}]: what the worker answered for the docs/policies.md cases.
POLICY_ANSWERS: list[list[Any]] = [
    ["context::policy::resolve", {"namespace": "acme/proj-7", "model_id": "gpt-a"}, {"result": RESOLVED}],
    ["context::policy::list", {"surface": "retention", "namespace": "acme/proj-7"},
     {"result": {"versions": [_version("retention:acme/proj-7:1", 1, True, {"verbatim_turns": 1})]}}],
    ["context::policy::list", {"surface": "settings", "namespace": "acme/proj-7"}, {"error": STORE_FAULT}],
    ["context::policy::list", {"surface": "budget", "namespace": "acme"},
     {"result": {"versions": [_version("budget:acme:2", 2, False, {"version": 3, "headroom": 0.25}),
                              _version("budget:acme:1", 1, True, {"version": 3, "headroom": 0.2})]}}],
    ["context::policy::list", {"surface": "budget", "namespace": "acme", "model_id": "gpt-a"},
     {"result": {"versions": [_version("budget:acme:1:gpt-a", 1, True, {"version": 3, "headroom": 0.3})]}}],
    ["context::policy::list", {"surface": "budget", "namespace": "acme", "model_id": "gpt-b"},
     {"result": {"versions": [_version("budget:acme:1:gpt-b", 1, False, {"version": 3, "headroom": 0.4})]}}],
    ["context::policy::scopes", {}, {"result": {"namespaces": ["acme", "acme/proj-7", "beta"], "scopes": [
        _scope("budget", None, None, 1, 1), _scope("retention", None, None, 1, 1),
        _scope("budget", "acme", None, 2, 1), _scope("budget", "acme", "gpt-a", 1, 1),
        _scope("budget", "acme", "gpt-b", 1, None), _scope("retention", "acme/proj-7", None, 1, 1),
        _scope("settings", "acme/proj-7", None, 1, 1), _scope("settings", "beta", "gpt-c", 1, 1)]}}],
    ["context::policy::list", {"surface": "budget"},
     {"result": {"versions": [_version("budget::1", 1, True, {"version": 3, "headroom": 0.1})]}}],
    ["context::policy::list", {"surface": "retention"},
     {"result": {"versions": [_version("retention::1", 1, True, {"verbatim_turns": 3})]}}],
    ["context::policy::activate", {"id": "budget:acme:2", "token": "s3cret"},
     {"result": {"id": "budget:acme:2", "surface": "budget", "namespace": "acme", "model_id": None, "version": 2,
                 "is_active": True, "created_at": CREATED}}],
    ["context::policy::activate", {"id": "budget:acme:2"}, {"error": UNAUTHORIZED}],
    ["context::policy::withdraw", {"surface": "budget", "namespace": "acme", "model_id": "gpt-a", "token": "s3cret"},
     {"result": {"surface": "budget", "namespace": "acme", "model_id": "gpt-a", "withdrawn": "budget:acme:1:gpt-a"}}],
]
# The lookup of acme/proj-7 for gpt-a: resolve and the scopes, then each level nearest first, each
# surface untagged, (budget, settings) tagged gpt-a, and every other tag the level has (gpt-b at acme).
LOOKUP_CALLS = [["context::policy::resolve", {"namespace": "acme/proj-7", "model_id": "gpt-a"}],
                ["context::policy::scopes", {}]] + [
    ["context::policy::list", {"surface": surface, **({"namespace": level} if level else {}),
                               **({"model_id": tag} if tag else {})}]
    for level in ("acme/proj-7", "acme", None)
    for surface, tag in (("budget", None), ("budget", "gpt-a"), *((("budget", "gpt-b"),) if level == "acme" else ()),
                         ("retention", None), ("settings", None), ("settings", "gpt-a"))]


def show_policies(browser: Browser, value: dict[str, Any], answers: list[list[Any]]) -> None:
    browser.js(f"window.__show({json.dumps(value)}, [], {json.dumps(answers)})")
    browser.wait_for("document.getElementById('context-manager-cfg-policy-show') !== null")


def press(browser: Browser, selector: str) -> None:
    browser.js(f"document.querySelector({json.dumps(selector)}).click()")


def look_up(browser: Browser, namespace: str, model: str) -> None:
    type_into(browser, "policy-namespace", namespace)
    type_into(browser, "policy-model", model)
    press(browser, "#context-manager-cfg-policy-show")
    browser.wait_for(f"window.__invocations.length >= {len(LOOKUP_CALLS)} && "
                     "document.querySelector('[data-policy-namespace]') !== null && "
                     "!document.getElementById('context-manager-cfg-policy-show').disabled")


def policy_rows(browser: Browser) -> dict[str, Any]:
    """Per level shown: its table rows as cell texts, or the line a level without versions shows."""
    return browser.js("""Object.fromEntries([...document.querySelectorAll('[data-policy-namespace]')].map((level) => {
        const rows = [...level.querySelectorAll('tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))
        return [level.dataset.policyNamespace, rows.length ? rows : level.querySelector('p').textContent]
    }))""")


def resolution(browser: Browser) -> dict[str, Any]:
    return browser.js("""({
        title: document.querySelector('.ctx-cfg-policy-resolved h3').textContent,
        sources: [...document.querySelectorAll('[data-policy-resolve="sources"] tr')]
            .map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]),
        warnings: [...document.querySelectorAll('[data-policy-resolve="warnings"] li')].map((li) => li.textContent),
    })""")


def namespaces_shown(browser: Browser) -> list[str]:
    return browser.js("[...document.querySelectorAll('[data-policy-pick]')].map((b) => b.textContent)")


def policy_status(browser: Browser) -> str:
    return browser.js("document.getElementById('context-manager-cfg-policy-status').textContent")


def test_the_policies_section_lists_each_levels_versions_and_the_resolution(browser: Browser) -> None:
    show_policies(browser, CUSTOM, POLICY_ANSWERS)
    sections = browser.js("[...document.querySelectorAll('section h2')].map((h) => h.textContent)")
    assert sections[-1] == "Policies" and sections[:-1] == [
        "Profile", "Budget defaults", "Pruning and compaction", "Runtime", "Overflow and counting",
        "Task retention", "Cache-aware reduction", "Retention policy", "Other settings"]
    # Nothing is asked before a lookup; the configuration's fields are as without the section.
    assert browser.js("window.__invocations") == []
    assert set(controls(browser)) == set(WorkerConfig.key_names())
    assert browser.js("document.getElementById('context-manager-cfg-policy-token').type") == "password"
    look_up(browser, "acme/proj-7", "gpt-a")
    assert browser.js("window.__invocations") == LOOKUP_CALLS
    assert resolution(browser) == {
        "title": "acme/proj-7, model gpt-a, is served with",
        "sources": [["budget", "budget:acme:1:gpt-a (acme, tagged gpt-a, version 1)"],
                    ["retention", "retention:acme/proj-7:1 (acme/proj-7, untagged, version 1)"],
                    ["settings", "the worker's configuration"]],
        "warnings": ["context_budget_resolved_at: the budget comes from acme, tagged gpt-a",
                     "retention_policy_overridden: the retention policy of acme/proj-7 hides that of org-global"],
    }
    assert policy_rows(browser) == {
        "acme/proj-7": [
            ["retention", "untagged", "1", "retention:acme/proj-7:1", "active", CREATED, '{"verbatim_turns":1}',
             "Withdraw"],
            ["settings", "untagged", STORE_FAULT["code"] + ": " + STORE_FAULT["message"]],
        ],
        "acme": [
            ["budget", "untagged", "2", "budget:acme:2", "inactive", CREATED, '{"version":3,"headroom":0.25}', "Activate"],
            ["budget", "untagged", "1", "budget:acme:1", "active", CREATED, '{"version":3,"headroom":0.2}', "Withdraw"],
            ["budget", "gpt-a", "1", "budget:acme:1:gpt-a", "active", CREATED, '{"version":3,"headroom":0.3}',
             "Withdraw"],
            ["budget", "gpt-b", "1", "budget:acme:1:gpt-b", "inactive", CREATED, '{"version":3,"headroom":0.4}',
             "Activate"],
        ],
        "org-global": [
            ["budget", "untagged", "1", "budget::1", "active", CREATED, '{"version":3,"headroom":0.1}', "Withdraw"],
            ["retention", "untagged", "1", "retention::1", "active", CREATED, '{"verbatim_turns":3}', "Withdraw"],
        ],
    }
    assert policy_status(browser) == ""
    assert namespaces_shown(browser) == ["acme", "acme/proj-7", "beta"]
    assert browser.js("window.__proposals") == []
    section = """(() => {
        const section = [...document.querySelectorAll('section')].find((s) => s.querySelector('h2').textContent === 'Policies')
        const box = section.getBoundingClientRect()
        return { x: 0, y: Math.floor(box.top + window.scrollY) - 8, width: 960, height: Math.ceil(box.height) + 16, scale: 1 }
    })()"""
    browser.js("document.activeElement.blur()")
    browser.screenshot(ARTIFACTS / "console-form-policies.png", clip=browser.js(section))
    if UPDATE_SCREENSHOTS:
        browser.screenshot(DOCS_POLICIES_SCREENSHOT, clip=browser.js(section))


def test_activate_and_withdraw_send_the_version_and_scope_with_the_token(browser: Browser) -> None:
    show_policies(browser, {"policy_write_token": "s3cret"}, POLICY_ANSWERS)
    look_up(browser, "acme/proj-7", "gpt-a")
    type_into(browser, "policy-token", "s3cret")
    browser.js("window.__invocations = []")
    press(browser, 'button[data-policy-action="activate"][data-policy-id="budget:acme:2"]')
    browser.wait_for(f"window.__invocations.length === {1 + len(LOOKUP_CALLS)}")
    # The change, then the same lookup again, so the view shows what is now in force.
    assert browser.js("window.__invocations") == [
        ["context::policy::activate", {"id": "budget:acme:2", "token": "s3cret"}], *LOOKUP_CALLS]
    browser.wait_for("document.getElementById('context-manager-cfg-policy-status').textContent !== ''")
    assert policy_status(browser) == "Activated budget:acme:2"
    browser.wait_for("!document.getElementById('context-manager-cfg-policy-show').disabled")
    browser.js("window.__invocations = []")
    press(browser, 'button[data-policy-action="withdraw"][data-policy-id="budget:acme:1:gpt-a"]')
    browser.wait_for(f"window.__invocations.length === {1 + len(LOOKUP_CALLS)}")
    assert browser.js("window.__invocations") == [
        ["context::policy::withdraw", {"surface": "budget", "namespace": "acme", "model_id": "gpt-a",
                                       "token": "s3cret"}], *LOOKUP_CALLS]
    browser.wait_for("document.getElementById('context-manager-cfg-policy-status').textContent === "
                     "'Withdrew budget:acme:1:gpt-a'")
    # The token stays in the view: the configuration is never proposed, the field stays a password.
    assert browser.js("window.__proposals") == []
    assert browser.js("document.getElementById('context-manager-cfg-policy-token').type") == "password"


def test_a_refused_change_shows_the_workers_fault_and_reads_nothing_again(browser: Browser) -> None:
    show_policies(browser, {}, POLICY_ANSWERS)
    look_up(browser, "acme/proj-7", "gpt-a")
    browser.js("window.__invocations = []")
    press(browser, 'button[data-policy-action="activate"][data-policy-id="budget:acme:2"]')
    browser.wait_for("document.getElementById('context-manager-cfg-policy-status').textContent !== ''")
    assert policy_status(browser) == f"{UNAUTHORIZED['code']}: {UNAUTHORIZED['message']}"
    assert browser.js("window.__invocations") == [["context::policy::activate", {"id": "budget:acme:2"}]]


def test_the_org_global_level_alone_and_a_malformed_namespace(browser: Browser) -> None:
    show_policies(browser, {}, POLICY_ANSWERS)
    type_into(browser, "policy-namespace", "Acme/")
    press(browser, "#context-manager-cfg-policy-show")
    assert policy_status(browser) == NAMESPACE_FAULT
    assert browser.js("window.__invocations") == []
    type_into(browser, "policy-namespace", "")
    press(browser, "#context-manager-cfg-policy-show")
    browser.wait_for("document.querySelector('[data-policy-namespace]') !== null")
    assert browser.js("window.__invocations") == [["context::policy::resolve", {}], ["context::policy::scopes", {}]] + [
        ["context::policy::list", {"surface": s}] for s in ("budget", "retention", "settings")]
    # No canned resolve for the org-global level: its fault stands where the resolution would.
    assert browser.js("document.querySelector('[data-policy-resolve=\"fault\"]').textContent").startswith(
        "context/not_found: ")
    assert policy_rows(browser) == {"org-global": [
        ["budget", "untagged", "1", "budget::1", "active", CREATED, '{"version":3,"headroom":0.1}', "Withdraw"],
        ["retention", "untagged", "1", "retention::1", "active", CREATED, '{"verbatim_turns":3}', "Withdraw"]]}
    assert policy_status(browser) == ""


def test_a_namespace_with_policies_is_picked_from_the_list_with_every_model_tag(browser: Browser) -> None:
    show_policies(browser, {}, POLICY_ANSWERS)
    look_up(browser, "acme/proj-7", "gpt-a")
    browser.js("window.__invocations = []")
    press(browser, 'button[data-policy-pick="beta"]')
    browser.wait_for("window.__invocations.length >= 8 && "
                     "document.querySelector('[data-policy-namespace=\"beta\"]') !== null && "
                     "!document.getElementById('context-manager-cfg-policy-show').disabled")
    assert browser.js("document.getElementById('context-manager-cfg-policy-namespace').value") == "beta"
    # The model typed stays; settings at beta are also listed for gpt-c, a tag the scopes name.
    assert browser.js("window.__invocations") == [
        ["context::policy::resolve", {"namespace": "beta", "model_id": "gpt-a"}], ["context::policy::scopes", {}],
        *[["context::policy::list", {"surface": surface, **({"namespace": level} if level else {}),
                                     **({"model_id": tag} if tag else {})}]
          for level in ("beta", None)
          for surface, tag in (("budget", None), ("budget", "gpt-a"), ("retention", None), ("settings", None),
                               ("settings", "gpt-a"), *((("settings", "gpt-c"),) if level == "beta" else ()))]]


def test_a_failing_scopes_list_is_shown_and_the_levels_are_listed_as_typed(browser: Browser) -> None:
    answers = [a for a in POLICY_ANSWERS if a[0] != "context::policy::scopes"]
    answers.append(["context::policy::scopes", {}, {"error": STORE_FAULT}])
    show_policies(browser, {}, answers)
    type_into(browser, "policy-namespace", "acme")
    press(browser, "#context-manager-cfg-policy-show")
    browser.wait_for("document.querySelector('[data-policy-namespaces]') !== null && "
                     "!document.getElementById('context-manager-cfg-policy-show').disabled")
    assert browser.js("document.querySelector('[data-policy-namespaces]').textContent") == (
        STORE_FAULT["code"] + ": " + STORE_FAULT["message"])
    assert [call[1] for call in browser.js("window.__invocations")[2:]] == [
        {"surface": s, **({"namespace": level} if level else {})}
        for level in ("acme", None) for s in ("budget", "retention", "settings")]

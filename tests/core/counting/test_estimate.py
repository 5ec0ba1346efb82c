"""Worked examples W1-W16 of spec 01 §9: serializations, byte counts and token counts."""

import hashlib

import pytest

from context_manager.core.counting.estimate import HEURISTIC, message_view_bytes
from context_manager.wire.codec import dumps, loads
from context_manager.wire.decode import decode_function, decode_message

E = HEURISTIC


def msg(raw: str) -> dict:
    return decode_message(loads(raw))


@pytest.mark.parametrize(
    "raw, size, tokens",
    [
        ('{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1}', 72, 18),
        ('{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1001}', 75, 18),
        ('{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}', 69, 17),
        ('{"role":"user","content":[{"type":"text","text":"q"}],"timestamp":1}', 68, 17),
        ('{"role":"assistant","content":[],"stop_reason":"end","model":"m","provider":"p","timestamp":2}', 94, 23),
        ('{"role":"custom","custom_type":"t","content":[],"timestamp":4}', 62, 15),
        ('{"role":"assistant","content":[{"type":"text","text":"answer"}],"stop_reason":"end","model":"m","provider":"p","timestamp":2}', 125, 31),
    ],
)
def test_w1_w2_w3_sizes(raw, size, tokens):
    m = msg(raw)
    assert dumps(m) == raw.encode()
    assert len(dumps(m)) == size
    assert E.message(m) == tokens


def test_w2_function_result_defaults_are_filled():
    m = msg('{"role":"function_result","function_call_id":"c","function_id":"f","content":[],"timestamp":3}')
    assert dumps(m) == (b'{"role":"function_result","function_call_id":"c","function_id":"f","content":[],'
                        b'"details":null,"is_error":false,"timestamp":3}')
    assert len(dumps(m)) == 126
    assert E.message(m) == 31


def test_w4_assistant_member_order_with_every_optional_member():
    raw = ('{"timestamp":7,"provider":"anthropic","model":"claude-sonnet-4",'
           '"usage":{"cost_usd":0.0125,"reasoning":3,"cache_write":0,"cache_read":100,"output":20,"input":1000},'
           '"warnings":["dropped temperature"],"error_kind":"rate_limited","error_message":"slow down",'
           '"native_stop_reason":"rate_limit","stop_reason":"error","content":[],"role":"assistant"}')
    m = msg(raw)
    expected = ('{"role":"assistant","content":[],"stop_reason":"error","native_stop_reason":"rate_limit",'
                '"error_message":"slow down","error_kind":"rate_limited","warnings":["dropped temperature"],'
                '"usage":{"input":1000,"output":20,"cache_read":100,"cache_write":0,"reasoning":3,"cost_usd":0.0125},'
                '"model":"claude-sonnet-4","provider":"anthropic","timestamp":7}')
    assert dumps(m) == expected.encode()
    assert len(dumps(m)) == 343
    assert E.message(m) == 85


def test_w5_nulls_defaults_and_unknown_members():
    m = msg('{"role":"assistant","content":[{"type":"thinking","text":"hmm","signature":null},{"type":"text","text":"ok"}],'
            '"stop_reason":"end","native_stop_reason":null,"usage":{"input":10,"output":5,"cost_usd":3},"warnings":[],'
            '"model":"m","provider":"p","timestamp":2,"id":"msg_1"}')
    assert dumps(m) == (b'{"role":"assistant","content":[{"type":"thinking","text":"hmm"},{"type":"text","text":"ok"}],'
                        b'"stop_reason":"end","warnings":[],"usage":{"input":10,"output":5,"cost_usd":3.0},'
                        b'"model":"m","provider":"p","timestamp":2}')
    assert len(dumps(m)) == 215
    assert E.message(m) == 53
    u = msg('{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}],"timestamp":1,"id":"u1"}')
    assert len(dumps(u)) == 69
    assert E.message(u) == 17


def _weather(details_json: str | None, text: str = "22 degrees") -> dict:
    details = f',"details":{details_json}' if details_json is not None else ""
    return msg('{"role":"function_result","function_call_id":"c1","function_id":"weather::get",'
               f'"content":[{{"type":"text","text":"{text}"}}]{details},"timestamp":1003}}')


def test_w6_details_are_nulled_in_the_estimator_view():
    with_empty = _weather("{}")
    assert len(dumps(with_empty)) == 174
    assert message_view_bytes(with_empty) == (176, 0)
    assert E.message(with_empty) == 44
    without = _weather(None)
    assert len(dumps(without)) == 176
    assert E.message(without) == 44
    def body(details: str) -> dict:
        return msg('{"role":"function_result","function_call_id":"c","function_id":"f",'
                   f'"content":[{{"type":"text","text":"body"}}],"details":{details},"timestamp":3}}')

    assert len(dumps(body('{"content":"xxxxxxxxxx"}'))) == 175
    assert message_view_bytes(body('{"content":"xxxxxxxxxx"}')) == (155, 0)
    assert E.message(body('{"content":"xxxxxxxxxx"}')) == 38
    assert E.message(body("null")) == 38


@pytest.mark.parametrize(
    "details, size, tokens",
    [
        ('{"status":"denied","reason":"' + "x" * 400 + '"}', 553, 138),
        ('{"status":"ok","reason":"' + "x" * 400 + '"}', 126, 31),
        ('"denied"', 126, 31),
    ],
)
def test_w7_denied_envelope_counts_in_full(details, size, tokens):
    m = msg('{"role":"function_result","function_call_id":"c","function_id":"f","content":[],'
            f'"details":{details},"timestamp":3}}')
    assert message_view_bytes(m)[0] == size
    assert E.message(m) == tokens


def test_w7_denied_details_keys_are_sorted():
    m = msg('{"role":"function_result","function_call_id":"c","function_id":"f","content":[],'
            '"details":{"status":"denied","reason":"r"},"timestamp":3}')
    assert b'"details":{"reason":"r","status":"denied"}' in dumps(m)


def test_w8_image_allowance_ignores_data_length():
    small = msg('{"role":"user","content":[{"type":"image","mime":"image/png","data":"AAAA"}],"timestamp":1}')
    assert message_view_bytes(small) == (87, 1)
    assert E.message(small) == 4117
    big = msg('{"role":"user","content":[{"type":"image","mime":"image/png","data":"' + "A" * 729420 + '"}],"timestamp":1}')
    assert E.message(big) == 4117


def test_w9_nested_image_inside_an_inline_result():
    m = msg('{"role":"user","content":[{"type":"image","mime":"image/png","data":"AAAA"},'
            '{"type":"function_result","function_call_id":"c1","content":[{"type":"image","mime":"image/jpeg","data":"/9j/"}]}],'
            '"timestamp":1}')
    assert message_view_bytes(m) == (197, 2)
    assert E.message(m) == 8241


def test_w10_image_in_a_function_result_message():
    m = msg('{"role":"function_result","function_call_id":"c1","function_id":"browser::screenshot",'
            '"content":[{"type":"text","text":"caption"},{"type":"image","mime":"image/png","data":"AAAA"}],'
            '"details":{},"is_error":false,"timestamp":1}')
    assert message_view_bytes(m) == (223, 1)
    assert E.message(m) == 4151


def test_w11_function_calls():
    frame = '{"role":"assistant","content":[%s],"stop_reason":"function_call","model":"m","provider":"p","timestamp":2}'
    bare = msg(frame % '{"type":"function_call","id":"c1","function_id":"f::g"}')
    assert b'"arguments":null' in dumps(bare)
    assert len(dumps(bare)) == 176
    assert E.message(bare) == 44
    args = msg(frame % '{"type":"function_call","id":"c1","function_id":"f::g","arguments":{"b":1,"a":"x"}}')
    assert b'"arguments":{"a":"x","b":1}' in dumps(args)
    assert len(dumps(args)) == 187
    assert E.message(args) == 46


def test_w12_escaping_and_utf8():
    text = 'a"b\\c\n\x01\x7fé😀/\u2028'
    m = decode_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
    assert len(dumps(m)) == 93
    assert E.message(m) == 23
    m2 = decode_message({"role": "user", "content": [{"type": "text", "text": "héllo 😀"}], "timestamp": 1})
    assert len(dumps(m2)) == 78
    assert E.message(m2) == 19
    assert E.text("héllo 😀") == 2
    assert E.text("ééé😀") == 2


def test_w13_ansi_escape_bytes():
    m = decode_message({"role": "function_result", "function_call_id": "c", "function_id": "f",
                        "content": [{"type": "text", "text": "\x1b[31mred\x1b[0m"}], "timestamp": 3})
    assert len(dumps(m)) == 173
    assert E.message(m) == 43


def test_w14_custom_messages_count_in_full():
    m = msg('{"role":"custom","custom_type":"ui_marker","content":[{"type":"text","text":"app-facing bookkeeping"}],"timestamp":1004}')
    assert len(dumps(m)) == 120
    assert E.message(m) == 30
    scrambled = msg('{"timestamp":8,"details":{"z":[{"b":2,"a":1}],"a":null},"display":"Compacted",'
                    '"content":[{"type":"text","text":"summary"}],"custom_type":"compaction","role":"custom"}')
    assert dumps(scrambled) == (b'{"role":"custom","custom_type":"compaction","content":[{"type":"text","text":"summary"}],'
                                b'"display":"Compacted","details":{"a":null,"z":[{"a":1,"b":2}]},"timestamp":8}')
    assert len(dumps(scrambled)) == 166
    assert E.message(scrambled) == 41
    nulls = msg('{"role":"custom","custom_type":"n","content":[],"details":null,"display":null,"timestamp":4}')
    assert len(dumps(nulls)) == 62
    big = decode_message({"role": "custom", "custom_type": "compaction",
                          "content": [{"type": "text", "text": "x" * 2000}], "timestamp": 1001})
    assert len(dumps(big)) == 2099
    assert E.message(big) == 524


def test_w15_attachment_id_and_file_blocks():
    img = msg('{"role":"user","content":[{"type":"image","mime":"image/png","data":"aGk=","attachment_id":"a_9c1d"}],"timestamp":1}')
    assert message_view_bytes(img) == (112, 1)
    assert E.message(img) == 4124
    f = msg('{"role":"user","content":[{"type":"file","attachment_id":"a_1","name":"r.pdf","mime":"application/pdf","size":1024}],"timestamp":1}')
    assert len(dumps(f)) == 131
    assert E.message(f) == 32


@pytest.mark.parametrize(
    "raw, serialized, tokens",
    [
        ('{"name":"agent_trigger","description":"Call one permitted iii function.","parameters":{"type":"object","properties":{"function":{"type":"string"}}}}',
         '{"name":"agent_trigger","description":"Call one permitted iii function.","parameters":{"properties":{"function":{"type":"string"}},"type":"object"}}',
         37),
        ('{"name":"x","description":"","strict":true}', '{"name":"x","description":"","parameters":null}', 11),
        ('{"name":"x","description":"d","label":null,"execution_mode":"parallel"}',
         '{"name":"x","description":"d","parameters":null,"execution_mode":"parallel"}', 19),
    ],
)
def test_w16_tool_schemas(raw, serialized, tokens):
    f = decode_function(loads(raw))
    assert dumps(f) == serialized.encode()
    assert E.function(f) == tokens


def _lease_key(messages: list[dict]) -> str:
    h = hashlib.sha256()
    for m in messages:
        h.update(dumps(m) + b"\x00")
    return h.hexdigest()


def test_w23_serialization_pins_the_default_lease_key():
    assert _lease_key([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    hello = msg('{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1}')
    assert _lease_key([hello]) == "5952150674b4dccefa9b5fdb3439452a56220bee9c1604da9bf4d9910da34f47"
    call = msg('{"role":"assistant","content":[{"type":"function_call","id":"c1","function_id":"f::g","arguments":{"b":1,"a":2}}],'
               '"stop_reason":"function_call","model":"m","provider":"p","timestamp":2}')
    assert _lease_key([hello, call]) == "8398e7f7d48c54c2dd3b13a4b006edc5fa328093f1b58239b7fa266a649cb6c3"

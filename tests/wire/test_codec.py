import math

import pytest

from context_manager.core.counting.estimate import HEURISTIC
from context_manager.wire.codec import canonical_free_form, dumps, dumps_wire, format_float, loads, utf8_len
from context_manager.wire.errors import DecodeError


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0, "0.0"), (-0.0, "-0.0"), (3.0, "3.0"), (100.0, "100.0"), (1e15, "1000000000000000.0"),
        (1.5, "1.5"), (123.456, "123.456"), (0.1, "0.1"), (0.0025, "0.0025"), (0.00001, "0.00001"),
        (0.000001, "1e-6"), (1e-7, "1e-7"), (1e16, "1e+16"), (1.5e300, "1.5e+300"),
        (2.220446049250313e-16, "2.220446049250313e-16"), (5e-324, "5e-324"), (-1.5, "-1.5"),
        (0.0125, "0.0125"), (1.2345678901234567e20, "1.2345678901234567e+20"),
    ],
)
def test_float_text_follows_the_reference_layout(value, text):
    assert format_float(value) == text


def test_free_form_values_are_sorted_recursively_and_floats_keep_reference_text():
    value = loads(b'{"z":[{"b":2,"a":1}],"a":null,"f":[-0,1e2,1.5,12345678901234567890,0.1e1]}')
    assert dumps(canonical_free_form(value)) == (
        b'{"a":null,"f":[0,100.0,1.5,12345678901234567890,1.0],"z":[{"a":1,"b":2}]}'
    )


def test_w28_float_formats_inside_free_form_values():
    value = canonical_free_form([1e16, 1e-7, 0.00001, 0.000001, 1e15])
    assert dumps(value) == b"[1e+16,1e-7,0.00001,1e-6,1000000000000000.0]"


def test_integers_beyond_64_bits_become_floats():
    assert dumps(canonical_free_form(loads(b"[123456789012345678901]"))) == b"[1.2345678901234568e+20]"
    assert dumps(canonical_free_form([1 << 70])) == b"[1.1805916207174113e+21]"


def test_string_escaping_matches_the_reference():
    text = 'a"b\\c\n\x01\x7fé😀/\u2028\x1b'
    assert dumps(text) == b'"a\\"b\\\\c\\n\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80/\xe2\x80\xa8\\u001b"'


def test_wire_output_sorts_every_key():
    assert dumps_wire({"tokens": 1, "by_role": {"user": 1, "assistant": 0}}) == (
        b'{"by_role":{"assistant":0,"user":1},"tokens":1}'
    )


@pytest.mark.parametrize("raw", [b"", b"   ", b"{", b"NaN", b"[Infinity]", b"1e400", b'"\\ud800"', b"{'a':1}"])
def test_malformed_json_is_a_serialization_error(raw):
    with pytest.raises(DecodeError) as info:
        loads(raw)
    assert info.value.wire_message.startswith("serialization error: ")


def test_duplicate_keys_keep_the_last_value():
    assert loads(b'{"a":1,"a":2}') == {"a": 2}


def test_utf8_length_counts_bytes():
    assert utf8_len("héllo 😀") == 11
    assert utf8_len("ééé😀") == 10
    assert utf8_len("plain") == 5


def test_a_lone_surrogate_counts_as_its_three_surrogate_escaped_bytes():
    assert utf8_len("\ud800") == 3
    assert utf8_len("a\udc00b") == 5
    assert utf8_len("\u00e9\ud800") == 5
    # Two surrogates in a Python str stay two code points: 6 bytes, not the pair's 4.
    assert utf8_len("\ud83d\ude00") == 6
    assert HEURISTIC.text("\ud800" * 4) == 3


def test_non_finite_floats_are_rejected_in_free_form_values():
    with pytest.raises(DecodeError):
        canonical_free_form([math.inf])


def test_orjson_float_text_equals_the_reference_in_the_band_kept_as_float():
    # Free-form floats in [1e-4, 1e16) stay Python floats: orjson must write them as the original does.
    import random
    import struct

    import orjson

    rng = random.Random(11)
    checked = 0
    while checked < 20000:
        x = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if x == x and 1e-4 <= abs(x) < 1e16:
            assert orjson.dumps(x).decode() == format_float(x)
            checked += 1
    for x in (1e-4, 0.1, 0.3, 1 / 3, 1e15, 9.999999999999998e15, 123456789.0, 2.5):
        assert orjson.dumps(x).decode() == format_float(x)

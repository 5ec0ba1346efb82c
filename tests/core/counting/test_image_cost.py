"""Image sizes from header bytes, provider image costs, and their use under ``estimator: auto``."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from context_manager import call
from context_manager.core.counting.image_cost import (
    anthropic_tokens,
    image_provider,
    image_tokens,
    openai_tokens,
)
from context_manager.wire.image_header import image_size


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk + b"\x00" * 64


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 40


def jpeg(width: int, height: int, app_bytes: int = 5000) -> bytes:
    app1 = b"\xff\xe1" + struct.pack(">H", app_bytes + 2) + b"\x11" * app_bytes  # a large EXIF-like segment
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x00" * 9
    return b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9 + app1 + sof0 + b"\xff\xda" + b"\x00" * 32


def webp_vp8(width: int, height: int) -> bytes:
    data = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 20
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(data)) + b"WEBP" + b"VP8 " + struct.pack("<I", len(data)) + data


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    data = b"\x2f" + bits.to_bytes(4, "little") + b"\x00" * 20
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(data)) + b"WEBP" + b"VP8L" + struct.pack("<I", len(data)) + data


def webp_vp8x(width: int, height: int) -> bytes:
    data = b"\x00" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little") + b"\x00" * 20
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(data)) + b"WEBP" + b"VP8X" + struct.pack("<I", len(data)) + data


# --- header parsing -------------------------------------------------------------------------


@pytest.mark.parametrize("build", [png, gif, jpeg, webp_vp8, webp_vp8l, webp_vp8x])
@pytest.mark.parametrize("size", [(1, 1), (640, 480), (1024, 4096), (3000, 17)])
def test_each_format_reports_its_size(build, size):
    assert image_size(b64(build(*size))) == size


def test_a_data_url_prefix_is_skipped():
    assert image_size("data:image/png;base64," + b64(png(300, 200))) == (300, 200)


def test_jpeg_segments_are_skipped_without_decoding_them():
    assert image_size(b64(jpeg(800, 600, app_bytes=60000))) == (800, 600)


@pytest.mark.parametrize("data", ["", "abc", "not base64 at all!!", b64(b"hello world, this is plain text" * 3),
                                  b64(png(0, 10)), b64(b"\xff\xd8\xff\xda" + b"\x00" * 40),
                                  b64(png(10, 10))[:20]])
def test_unreadable_headers_are_none(data):
    assert image_size(data) is None


# --- provider formulas ----------------------------------------------------------------------


@pytest.mark.parametrize("size,tokens", [
    ((1024, 1024), 765),     # -> 768 x 768, 4 tiles (the guide's example)
    ((2048, 4096), 1105),    # -> 1024 x 2048 -> 768 x 1536, 6 tiles (the guide's example)
    ((512, 512), 255),       # no resize, 1 tile
    ((100, 100), 255),
    ((768, 1500), 85 + 170 * 6),  # no resize: 2 x 3 tiles
])
def test_openai_tiles(size, tokens):
    assert openai_tokens(*size) == tokens


def test_openai_wide_image_tile_count():
    # 4000 x 300 fits 2048 wide: 2048 x 153.6, shortest side already under 768: 4 x 1 tiles.
    assert openai_tokens(4000, 300) == 85 + 170 * 4


@pytest.mark.parametrize("size,tokens", [
    ((1000, 1000), 1334),   # 1,000,000 / 750, no resize
    ((200, 200), 54),       # 40,000 / 750 = 53.3
    ((1092, 1092), 1590),   # the guide's largest square without resize: 1,192,464 / 750
    ((2000, 1000), 1599),   # scaled to 1549 x 774 (about 1,600 tokens)
    ((4000, 100), 82),      # long edge to 1568: 1568 x 39 = 61,152 / 750
])
def test_anthropic_pixels(size, tokens):
    assert anthropic_tokens(*size) == tokens


@pytest.mark.parametrize("model_id,provider,family", [
    ("gpt-4o", None, "openai"), ("openai/gpt-4.1", None, "openai"), ("o3-mini", None, "openai"),
    ("claude-sonnet-4", None, "anthropic"), ("anthropic/claude-3-5-haiku", None, "anthropic"),
    ("gemini-2.5-pro", None, "gemini"), ("my-model", "google", "gemini"), ("x", "Anthropic", "anthropic"),
    ("llama-4", None, None), ("deepseek-chat", "deepseek", None),
])
def test_provider_family(model_id, provider, family):
    assert image_provider(model_id, provider) == family


def test_image_tokens_fall_back_to_the_flat_budget():
    block = {"type": "image", "mime": "image/png", "data": b64(png(1024, 1024))}
    assert image_tokens(block, "openai") == 765
    assert image_tokens(block, "anthropic") == 1399  # 1,048,576 / 750
    assert image_tokens(block, "gemini") == 258
    assert image_tokens(block, None) == 4096
    assert image_tokens({**block, "data": "????"}, "openai") == 4096


# --- in the functions -----------------------------------------------------------------------


def request(model_id: str, data: str, provider: str | None = None) -> dict:
    model = {"id": model_id, "limits": {"context_window": 200_000, "max_output_tokens": 1000}}
    if provider is not None:
        model["provider"] = provider
    image = {"role": "user", "timestamp": 1, "content": [{"type": "image", "mime": "image/png", "data": data}]}
    return {"model": model, "messages": [image]}


def test_count_tokens_prices_images_under_auto_only():
    data = b64(png(1024, 1024))
    heuristic = call("context::count-tokens", request("claude-sonnet-4", data))["tokens"]
    priced = call("context::count-tokens", request("claude-sonnet-4", data), config={"estimator": "auto"})["tokens"]
    assert priced - heuristic == 1399 - 4096
    gemini = call("context::count-tokens", request("gemini-2.5-pro", data), config={"estimator": "auto"})["tokens"]
    assert gemini - heuristic == 258 - 4096
    unknown = call("context::count-tokens", request("llama-4", data), config={"estimator": "auto"})["tokens"]
    assert unknown == heuristic


def test_assemble_prices_images_under_auto():
    data = b64(jpeg(2048, 4096))
    plain = call("context::assemble", request("openai/gpt-4o", data))
    auto = call("context::assemble", request("openai/gpt-4o", data), config={"estimator": "auto"})
    assert auto["breakdown"]["by_role"]["user"] == 1105 + 4  # the image plus the tokenizer's framing
    assert plain["breakdown"]["by_role"]["user"] > 4096

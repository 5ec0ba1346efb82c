"""Width and height of a base64 image, read from its header bytes only (no image library).

PNG, GIF, WebP (VP8, VP8L, VP8X) and JPEG (the first start-of-frame segment) are read; only the
bytes a header needs are decoded from the base64 text, so a large image costs a few small
decodes. Anything else, or a header that does not parse, is ``None``.

Formats: PNG (ISO/IEC 15948, IHDR is the first chunk), GIF (GIF89a specification, logical screen
descriptor), WebP (RFC 9649, "WebP Image Format"), JPEG (ITU-T T.81, Annex B: marker segments).
"""

from __future__ import annotations

import base64
import binascii
import struct

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (T.81 Table B.1): every SOFn except DHT (C4), JPG (C8), DAC (CC).
_SOF_MARKERS = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))
# Segments walked before a JPEG without a frame header is given up on.
_MAX_JPEG_SEGMENTS = 256


class _Base64Bytes:
    """Random access to the bytes of base64 text, decoding only the 4-character groups asked for."""

    __slots__ = ("_text", "size")

    def __init__(self, text: str) -> None:
        if text.startswith("data:"):
            comma = text.find(",")
            text = text[comma + 1:] if comma >= 0 else ""
        self._text = text
        padding = len(text) - len(text.rstrip("="))
        self.size = len(text) // 4 * 3 - padding

    def read(self, start: int, length: int) -> bytes | None:
        if start < 0 or length <= 0 or start + length > self.size:
            return None
        first = start // 3 * 4
        last = -(-(start + length) // 3) * 4
        try:
            raw = base64.b64decode(self._text[first:last], validate=True)
        except (binascii.Error, ValueError):
            return None
        offset = start - first // 4 * 3
        chunk = raw[offset:offset + length]
        return chunk if len(chunk) == length else None


def image_size(data: str) -> tuple[int, int] | None:
    """(width, height) in pixels of the base64 image ``data``, or ``None`` when unreadable."""
    source = _Base64Bytes(data)
    head = source.read(0, 30) if source.size >= 30 else source.read(0, source.size)
    if head is None:
        return None
    if head.startswith(_PNG_SIGNATURE) and len(head) >= 24 and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        return _valid(width, height)
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return _valid(width, height)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
        return _webp(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg(source)
    return None


def _valid(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 ":  # lossy: frame tag (3), start code 9d 01 2a, 14-bit dimensions
        if head[23:26] != b"\x9d\x01\x2a":
            return None
        width, height = struct.unpack("<HH", head[26:30])
        return _valid(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":  # lossless: signature 0x2f, then 14-bit width-1 and height-1
        if head[20] != 0x2F:
            return None
        bits = int.from_bytes(head[21:25], "little")
        return _valid((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":  # extended: flags (4), 24-bit canvas width-1 and height-1
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return _valid(width, height)
    return None


def _jpeg(source: _Base64Bytes) -> tuple[int, int] | None:
    offset = 2
    for _ in range(_MAX_JPEG_SEGMENTS):
        marker = source.read(offset, 2)
        if marker is None or marker[0] != 0xFF:
            return None
        kind = marker[1]
        if kind == 0xFF:  # fill byte
            offset += 1
            continue
        if kind == 0x01 or 0xD0 <= kind <= 0xD7:  # standalone markers carry no length
            offset += 2
            continue
        if kind in (0xD9, 0xDA):  # end of image, start of scan: no frame header before it
            return None
        length_bytes = source.read(offset + 2, 2)
        if length_bytes is None:
            return None
        (length,) = struct.unpack(">H", length_bytes)
        if length < 2:
            return None
        if kind in _SOF_MARKERS:
            frame = source.read(offset + 5, 4)  # after length (2) and sample precision (1)
            if frame is None:
                return None
            height, width = struct.unpack(">HH", frame)
            return _valid(width, height)
        offset += 2 + length
    return None

"""A small PNG decoder for tests (8-bit, non-interlaced; every filter type; chunk CRCs checked), so that
images written through the SDK can be compared pixel by pixel without an imaging library.
"""
import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


def chunks(data):
    """[(type, payload)] of a PNG, checking the signature and every chunk's CRC."""
    assert data[:8] == SIGNATURE, "not a PNG signature: %r" % data[:8]
    out, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, payload = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + payload), "bad CRC in chunk %r" % kind
        out.append((kind, payload))
        pos += 12 + length
    assert out[0][0] == b"IHDR" and out[-1][0] == b"IEND", [k for k, _ in out]
    return out


def decode(data):
    """The pixels of an 8-bit PNG as an H x W x C uint8 array (C = 1, 2, 3 or 4)."""
    parts = chunks(data)
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", parts[0][1])
    assert (depth, compression, filtering, interlace) == (8, 0, 0, 0), parts[0][1]
    channels = CHANNELS[colour]
    raw = zlib.decompress(b"".join(p for k, p in parts if k == b"IDAT"))
    stride = width * channels
    assert len(raw) == height * (stride + 1), (len(raw), height, stride)
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            upper_left = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                line[x] = (line[x] + predictor) & 0xFF
            else:
                assert kind == 0, "unknown filter type %d in row %d" % (kind, y)
        rows.append(bytes(line))
        previous = line
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width, channels)


def encode_plain(pixels):
    """A PNG of an H x W x C uint8 array written independently of the SDK (no filter): the "already
    encoded bytes" a user might log."""
    height, width, channels = pixels.shape
    colour = {1: 0, 3: 2, 4: 6}[channels]
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))

    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    return (SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

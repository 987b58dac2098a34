"""An independent TensorBoard event-file writer for the tests: its own protobuf wire encoding and its
own table-driven CRC-32C, sharing nothing with the C++ code under test (src/tfevents).

Field numbers follow TensorFlow's event.proto, summary.proto, tensor.proto, tensor_shape.proto,
histogram.proto, graph.proto and node_def.proto. Every `add_*` method returns the file offset of the
record it wrote, so tests can check the offsets the importer reports.

Standard library only; runs with /usr/bin/python3.
"""
import struct
import zlib

# --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven ----------------------------

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    """One TFRecord: length, masked CRC of the length, data, masked CRC of the data."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc(header)) + data + struct.pack("<I", masked_crc(data))


# --- protobuf wire format ----------------------------------------------------------------------------

def varint(n):
    if n < 0:
        n += 1 << 64  # int32/int64 negatives: ten bytes of two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire_type):
    return varint((field << 3) | wire_type)


def f_varint(field, n):
    return key(field, 0) + varint(n)


def f_double(field, x):
    return key(field, 1) + struct.pack("<d", x)


def f_float(field, x):
    return key(field, 5) + struct.pack("<f", x)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return key(field, 2) + varint(len(b)) + b


def f_packed_doubles(field, xs):
    return f_bytes(field, b"".join(struct.pack("<d", x) for x in xs))


def f_packed_floats(field, xs):
    return f_bytes(field, b"".join(struct.pack("<f", x) for x in xs))


def f_packed_varints(field, ns):
    return f_bytes(field, b"".join(varint(n) for n in ns))


# --- TensorFlow messages -----------------------------------------------------------------------------

DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_HALF = 1, 2, 3, 7, 9, 19


def tensor_shape(dims):
    return b"".join(f_bytes(2, f_varint(1, d)) for d in dims)


def tensor(dtype, dims=(), float_val=None, double_val=None, content=None, half_val=None, string_val=None,
           int64_val=None, packed=True):
    out = f_varint(1, dtype) + f_bytes(2, tensor_shape(dims))
    if content is not None:
        out += f_bytes(4, content)
    if float_val is not None:
        out += f_packed_floats(5, float_val) if packed else b"".join(f_float(5, x) for x in float_val)
    if double_val is not None:
        out += f_packed_doubles(6, double_val) if packed else b"".join(f_double(6, x) for x in double_val)
    if half_val is not None:
        out += f_packed_varints(13, half_val) if packed else b"".join(f_varint(13, x) for x in half_val)
    if int64_val is not None:
        out += f_packed_varints(10, int64_val)
    for s in string_val or ():
        out += f_bytes(8, s)
    return out


def plugin_metadata(plugin_name, content=b"", data_class=0):
    plugin_data = f_bytes(1, plugin_name) + (f_bytes(2, content) if content else b"")
    return f_bytes(1, plugin_data) + (f_varint(4, data_class) if data_class else b"")


def value(tag, metadata=None, simple_value=None, histo=None, image=None, tensor_bytes=None):
    out = f_bytes(1, tag)
    if metadata is not None:
        out += f_bytes(9, metadata)
    if simple_value is not None:
        out += f_float(2, simple_value)
    if image is not None:
        out += f_bytes(4, image)
    if histo is not None:
        out += f_bytes(5, histo)
    if tensor_bytes is not None:
        out += f_bytes(8, tensor_bytes)
    return out


def event(wall_time, step=0, file_version=None, graph_def=None, summary_values=None, session_status=None):
    out = f_double(1, wall_time)
    if step:
        out += f_varint(2, step)
    if file_version is not None:
        out += f_bytes(3, file_version)
    if graph_def is not None:
        out += f_bytes(4, graph_def)
    if summary_values is not None:
        out += f_bytes(5, b"".join(f_bytes(1, v) for v in summary_values))
    if session_status is not None:
        out += f_bytes(7, f_varint(1, session_status))
    return out


def histogram_proto(min_, max_, num, sum_, sum_squares, bucket_limit, bucket, packed=True):
    out = f_double(1, min_) + f_double(2, max_) + f_double(3, num) + f_double(4, sum_) + f_double(5, sum_squares)
    if packed:
        out += f_packed_doubles(6, bucket_limit) + f_packed_doubles(7, bucket)
    else:
        out += b"".join(f_double(6, x) for x in bucket_limit) + b"".join(f_double(7, x) for x in bucket)
    return out


def image_proto(height, width, colorspace, encoded):
    return f_varint(1, height) + f_varint(2, width) + f_varint(3, colorspace) + f_bytes(4, encoded)


def node_def(name, op, inputs=(), device=""):
    out = f_bytes(1, name) + f_bytes(2, op)
    for i in inputs:
        out += f_bytes(3, i)
    if device:
        out += f_bytes(4, device)
    return out


def graph_def(nodes):
    return b"".join(f_bytes(1, node_def(*n)) for n in nodes) + f_bytes(4, f_varint(1, 27))  # versions {producer: 27}


SESSION_START = 1


# --- images ------------------------------------------------------------------------------------------

def tiny_png(width, height, seed=0):
    """A valid RGB PNG of width x height whose pixels depend on `seed`."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(((x * 31 + y * 17 + seed * 7 + c * 50) & 0xFF) for x in range(width) for c in range(3))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


# --- files -------------------------------------------------------------------------------------------

class EventFileWriter:
    """Writes one event file record by record; each method returns the offset of its record."""

    def __init__(self, path, wall_time=1767225600.0):
        self.path = path
        self.f = open(path, "wb")
        self.add_record(event(wall_time, file_version="brain.Event:2"))

    def offset(self):
        return self.f.tell()

    def add_record(self, data):
        at = self.f.tell()
        self.f.write(frame(data))
        self.f.flush()
        return at

    def add_event(self, ev):
        return self.add_record(ev)

    # corruption
    def add_bad_data_crc(self, data):
        """A record whose data CRC does not match: returns (offset, length of the whole record)."""
        rec = bytearray(frame(data))
        rec[-1] ^= 0xFF
        at = self.f.tell()
        self.f.write(rec)
        self.f.flush()
        return at, len(rec)

    def add_bad_length_crc(self, data):
        """A record whose length bytes were damaged (so its length CRC fails)."""
        rec = bytearray(frame(data))
        rec[2] ^= 0x5A
        at = self.f.tell()
        self.f.write(rec)
        self.f.flush()
        return at, len(rec)

    def add_garbage(self, data):
        at = self.f.tell()
        self.f.write(data)
        self.f.flush()
        return at, len(data)

    def add_truncated(self, data, keep):
        """The first `keep` bytes of a framed record: a writer caught mid-write."""
        at = self.f.tell()
        self.f.write(frame(data)[:keep])
        self.f.flush()
        return at

    def close(self):
        self.f.close()

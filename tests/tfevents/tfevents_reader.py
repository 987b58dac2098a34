"""An independent reader of TensorBoard event files for the tests (it checks what `trainwatch export`
writes): TFRecord framing with CRC-32C checks and a small protobuf wire decoder, sharing nothing with
the C++ code under test. Standard library only."""
import struct

from tfevents_writer import masked_crc


def records(data):
    """The records of a whole file; raises ValueError on any framing or CRC problem."""
    out = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError("truncated header at %d" % pos)
        (length,) = struct.unpack_from("<Q", data, pos)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc(data[pos:pos + 8]) != length_crc:
            raise ValueError("length CRC mismatch at %d" % pos)
        end = pos + 12 + length
        if end + 4 > len(data):
            raise ValueError("truncated record at %d" % pos)
        payload = data[pos + 12:end]
        (data_crc,) = struct.unpack_from("<I", data, end)
        if masked_crc(payload) != data_crc:
            raise ValueError("data CRC mismatch at %d" % pos)
        out.append(payload)
        pos = end + 4
    return out


def fields(buf):
    """[(field number, wire type, value)]: ints for varints, bytes for the rest."""
    out = []
    pos = 0

    def read_varint():
        nonlocal pos
        shift = result = 0
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result

    while pos < len(buf):
        k = read_varint()
        field, wt = k >> 3, k & 7
        if wt == 0:
            out.append((field, wt, read_varint()))
        elif wt == 1:
            out.append((field, wt, buf[pos:pos + 8]))
            pos += 8
        elif wt == 5:
            out.append((field, wt, buf[pos:pos + 4]))
            pos += 4
        elif wt == 2:
            n = read_varint()
            out.append((field, wt, buf[pos:pos + n]))
            pos += n
        else:
            raise ValueError("wire type %d" % wt)
    return out


def first(fs, field, default=None):
    for f, _, v in fs:
        if f == field:
            return v
    return default


def all_of(fs, field):
    return [v for f, _, v in fs if f == field]


def doubles(fs, field):
    out = []
    for f, wt, v in fs:
        if f != field:
            continue
        if wt == 1:
            out.append(struct.unpack("<d", v)[0])
        else:
            out.extend(struct.unpack("<%dd" % (len(v) // 8), v))
    return out


def decode_tensor(buf):
    fs = fields(buf)
    shape = fields(first(fs, 2, b""))
    dims = [first(fields(d), 1, 0) for d in all_of(shape, 2)]
    return {"dtype": first(fs, 1, 0), "dims": dims, "string_val": all_of(fs, 8)}


def decode_value(buf):
    fs = fields(buf)
    v = {"tag": first(fs, 1, b"").decode("utf-8")}
    md = first(fs, 9)
    if md is not None:
        mfs = fields(md)
        pd = first(mfs, 1)
        v["plugin"] = first(fields(pd), 1, b"").decode() if pd is not None else ""
        v["data_class"] = first(mfs, 4, 0)
    for f, wt, raw in fs:
        if f == 2:
            v["simple_value"] = struct.unpack("<f", raw)[0]
        elif f == 4:
            ifs = fields(raw)
            v["image"] = {"height": first(ifs, 1, 0), "width": first(ifs, 2, 0), "encoded": first(ifs, 4, b"")}
        elif f == 5:
            hfs = fields(raw)
            v["histo"] = {"min": doubles(hfs, 1)[0], "max": doubles(hfs, 2)[0], "num": doubles(hfs, 3)[0],
                          "bucket_limit": doubles(hfs, 6), "bucket": doubles(hfs, 7)}
        elif f == 8:
            v["tensor"] = decode_tensor(raw)
    return v


def decode_event(buf):
    fs = fields(buf)
    ev = {"wall_time": struct.unpack("<d", first(fs, 1, b"\0" * 8))[0], "step": first(fs, 2, 0)}
    if ev["step"] >= 1 << 63:
        ev["step"] -= 1 << 64
    if first(fs, 3) is not None:
        ev["file_version"] = first(fs, 3).decode()
    if first(fs, 4) is not None:
        nodes = []
        for n in all_of(fields(first(fs, 4)), 1):
            nfs = fields(n)
            nodes.append({"name": first(nfs, 1, b"").decode(), "op": first(nfs, 2, b"").decode(),
                          "inputs": [i.decode() for i in all_of(nfs, 3)]})
        ev["graph_def"] = nodes
    if first(fs, 5) is not None:
        ev["summary"] = [decode_value(v) for v in all_of(fields(first(fs, 5)), 1)]
    return ev


def read_events(path):
    with open(path, "rb") as f:
        return [decode_event(r) for r in records(f.read())]

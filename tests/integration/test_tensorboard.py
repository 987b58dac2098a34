"""TensorBoard event files against the real binary: `trainwatch import` of golden files written by an
independent writer (tests/tfevents/tfevents_writer.py: its own protobuf encoding and CRC-32C), the
round trip through `trainwatch export`, and `trainwatch watch` tailing files as they grow.

Every expected value here is computed in Python from what the writer wrote, by the rules of
docs/tensorboard.md: scalars exactly (float32 values widened without rounding), the histogram edge
rules, the text table rule, the graph's scope tree, corrupt records named by file and offset.
"""
import hashlib
import json
import math
import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from conftest import BIN, loads
from harness import wait_until

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tfevents"))
import tfevents_reader  # noqa: E402
import tfevents_writer as tw  # noqa: E402

T0 = 1767225600.0
DBL_MAX = sys.float_info.max


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x):
    return struct.pack("<d", x)


def same_value(a, b):
    """Bit-for-bit, except that any NaN equals any NaN (the API writes all NaNs as "NaN")."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bits(a) == bits(b)


def api_number(v):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) if isinstance(v, str) else float(v)


def tool_env(tmp_path):
    env = dict(os.environ)
    env["TRAINWATCH_SPOOL_DIR"] = str(tmp_path / "spool")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("TRAINWATCH_SERVER", None)
    env.pop("TRAINWATCH_API_KEY", None)
    return env


def run_import(server_url, logdir, project, env, *extra):
    proc = subprocess.run([BIN, "import", str(logdir), "--project", project, "--server", server_url, "--json"] + list(extra),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
    report = json.loads(proc.stdout) if proc.stdout.strip().startswith(b"{") else None
    return proc.returncode, report, proc.stderr.decode()


def test_the_golden_writers_crc_and_framing_are_right():
    """The independent writer's CRC-32C against published vectors (RFC 3720 B.4), and a record's
    layout, so that the golden files are golden."""
    assert tw.crc32c(b"123456789") == 0xE3069283
    assert tw.crc32c(bytes(32)) == 0x8A9136AA
    assert tw.crc32c(bytes([0xFF] * 32)) == 0x62A8AB43
    assert tw.crc32c(bytes(range(32))) == 0x46DD794E
    rec = tw.frame(b"abc")
    assert rec[:8] == struct.pack("<Q", 3) and rec[12:15] == b"abc" and len(rec) == 19
    crc = tw.crc32c(b"abc")
    assert struct.unpack("<I", rec[15:])[0] == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------------
# The golden logdir


class Expected:
    """What one run must hold after the import."""

    def __init__(self):
        self.scalars = {}     # tag -> {step: (time, value)}
        self.histograms = {}  # tag -> {step: (time, edges, counts)}
        self.images = {}      # (tag, step, index) -> (time, bytes, width, height)
        self.texts = {}       # (tag, step) -> (time, text)
        self.graph = None     # [(name, op, inputs)]
        self.start = None
        self.end = None

    def wall(self, t):
        self.start = t if self.start is None else self.start
        self.end = t if self.end is None else max(self.end, t)


def markdown_table(strings, columns):
    def cell(s):
        return s.replace("|", "\\|").replace("\r", "").replace("\n", "<br>")
    out = "|" + "  |" * columns + "\n|" + "---|" * columns
    for i, s in enumerate(strings):
        if i % columns == 0:
            out += "\n|"
        out += " " + cell(s) + " |"
    return out


GRAPH_NODES = [("input", "Placeholder", [], ""), ("dense/kernel", "VariableV2", [], "/device:CPU:0"),
               ("dense/MatMul", "MatMul", ["input", "dense/kernel"], ""), ("dense/Relu", "Relu", ["dense/MatMul"], ""),
               ("loss", "Mean", ["dense/Relu:0", "^input"], "")]


def write_pytorch_run(path, exp):
    """torch.utils.tensorboard style: one simple_value event per scalar, v1 histo with numpy's edges."""
    w = tw.EventFileWriter(path, T0)
    exp.wall(T0)
    w.add_event(tw.event(T0 + 0.5, graph_def=tw.graph_def(GRAPH_NODES)))
    exp.wall(T0 + 0.5)
    exp.graph = [(n, op, list(inputs)) for n, op, inputs, _ in GRAPH_NODES]
    special = {(7, "loss"): math.nan, (8, "acc"): math.inf, (9, "acc"): -math.inf, (10, "lr"): -0.0,
               (11, "lr"): f32(1e-45), (12, "loss"): 3.4028234663852886e38}
    for step in range(30):
        for i, tag in enumerate(["loss", "acc", "lr"]):
            v = special.get((step, tag), f32(1.0 / (step + 1 + i)))
            t = T0 + 1 + step + 0.001 * i
            w.add_event(tw.event(t, step, summary_values=[tw.value(tag, simple_value=v)]))
            exp.wall(t)
            # Events of one step share the first one's time.
            exp.scalars.setdefault(tag, {})[step] = (T0 + 1 + step, v)
        if step % 10 == 0:
            edges = [-1.5 + step, -0.25 + step, 0.0 + step, 2.0 + step, 2.5 + step]
            counts = [3.0, 0.0, 7.0, 0.0]  # empty buckets inside and at the end are kept
            histo = tw.histogram_proto(edges[0], edges[-1], 10, 0, 0, edges, [0.0] + counts)
            t = T0 + 1 + step + 0.5
            w.add_event(tw.event(t, step, summary_values=[tw.value("weights/fc1", histo=histo)]))
            exp.wall(t)
            exp.histograms.setdefault("weights/fc1", {})[step] = (t, edges, counts)
    png = tw.tiny_png(4, 3, seed=1)
    w.add_event(tw.event(T0 + 40, 5, summary_values=[tw.value("samples", image=tw.image_proto(3, 4, 3, png))]))
    exp.wall(T0 + 40)
    exp.images[("samples", 5, 0)] = (T0 + 40, png, 4, 3)
    text = "**bold** line\nsecond line | with a bar"
    w.add_event(tw.event(T0 + 41, 5, summary_values=[tw.value("notes", metadata=tw.plugin_metadata("text", data_class=2),
                                                              tensor_bytes=tw.tensor(tw.DT_STRING, (), string_val=[text]))]))
    exp.wall(T0 + 41)
    exp.texts[("notes", 5)] = (T0 + 41, text)
    w.close()


def write_tf2_run(path, exp):
    """TF2 style: tensors with plugin metadata on each tag's first value only."""
    w = tw.EventFileWriter(path, T0 + 100)
    exp.wall(T0 + 100)
    scalars_md = tw.plugin_metadata("scalars", data_class=1)
    encodings = {
        "float_val_packed": lambda v: tw.tensor(tw.DT_FLOAT, (), float_val=[v]),
        "float_val_unpacked": lambda v: tw.tensor(tw.DT_FLOAT, (), float_val=[v], packed=False),
        "double_val": lambda v: tw.tensor(tw.DT_DOUBLE, (), double_val=[v]),
        "content_f32": lambda v: tw.tensor(tw.DT_FLOAT, (), content=struct.pack("<f", v)),
        "content_f64": lambda v: tw.tensor(tw.DT_DOUBLE, (), content=struct.pack("<d", v)),
        "int64_val": lambda v: tw.tensor(tw.DT_INT64, (), int64_val=[int(v)]),
    }
    for step in range(6):
        for i, (name, encode) in enumerate(encodings.items()):
            if name == "int64_val":
                v = float(123456789 + step)
            elif name.startswith("double") or name == "content_f64":
                v = 0.1 * (step + 1) / 3  # not a float32: must arrive as exactly this double
            else:
                v = f32(-2.5 + step / 7)
            t = T0 + 101 + step + 0.01 * i
            md = scalars_md if step == 0 else None
            w.add_event(tw.event(t, step, summary_values=[tw.value("s/" + name, metadata=md, tensor_bytes=encode(v))]))
            exp.wall(t)
            exp.scalars.setdefault("s/" + name, {})[step] = (T0 + 101 + step, v)
        # half: 0x3555 is 0.333251953125
        t = T0 + 101 + step + 0.09
        md = tw.plugin_metadata("scalars") if step == 0 else None
        w.add_event(tw.event(t, step, summary_values=[tw.value("s/half", metadata=md,
                                                               tensor_bytes=tw.tensor(tw.DT_HALF, (), half_val=[0x3555]))]))
        exp.wall(t)
        exp.scalars.setdefault("s/half", {})[step] = (T0 + 101 + step, 0.333251953125)
    hist_md = tw.plugin_metadata("histograms")
    # v2 histograms: [k, 3] rows of (left, right, count)
    v2 = {0: [(0.0, 0.5, 2.0), (0.5, 1.0, 0.0), (1.0, 1.5, 4.0)],
          1: [(-3.0, -1.0, 1.0), (-1.0, 1.0, 5.5)],
          2: [(0.25, 0.5, 1.0), (0.75, 1.0, 2.0)],          # a gap becomes an empty bucket
          3: [(4.0, 4.0, 9.0)],                               # every value equal (TF 2.x)
          4: [(7.0, 7.0, 0.0), (7.0, 7.0, 0.0), (7.0, 7.0, 5.0)]}  # every value equal (TF's v3)
    want = {0: ([0.0, 0.5, 1.0, 1.5], [2.0, 0.0, 4.0]), 1: ([-3.0, -1.0, 1.0], [1.0, 5.5]),
            2: ([0.25, 0.5, 0.75, 1.0], [1.0, 0.0, 2.0]), 3: ([3.5, 4.5], [9.0]), 4: ([6.5, 7.5], [5.0])}
    for step, rows in v2.items():
        flat = [x for row in rows for x in row]
        if step == 1:  # float32 values via float_val
            tensor = tw.tensor(tw.DT_FLOAT, (len(rows), 3), float_val=flat)
        else:
            tensor = tw.tensor(tw.DT_DOUBLE, (len(rows), 3), content=struct.pack("<%dd" % len(flat), *flat))
        t = T0 + 120 + step
        w.add_event(tw.event(t, step, summary_values=[tw.value("act", metadata=hist_md if step == 0 else None, tensor_bytes=tensor)]))
        exp.wall(t)
        exp.histograms.setdefault("act", {})[step] = (t, *want[step])
    # v2 images: [width, height, image...]
    imgs = [tw.tiny_png(5, 2, seed=s) for s in (2, 3)]
    tensor = tw.tensor(tw.DT_STRING, (4,), string_val=[b"5", b"2"] + imgs)
    w.add_event(tw.event(T0 + 130, 2, summary_values=[tw.value("gen", metadata=tw.plugin_metadata("images", data_class=3), tensor_bytes=tensor)]))
    exp.wall(T0 + 130)
    for i, img in enumerate(imgs):
        exp.images[("gen", 2, i)] = (T0 + 130, img, 5, 2)
    # text of rank 1 and 2
    text_md = tw.plugin_metadata("text")
    rank1 = ["first", "b|c"]
    w.add_event(tw.event(T0 + 131, 3, summary_values=[tw.value("table", metadata=text_md,
                                                               tensor_bytes=tw.tensor(tw.DT_STRING, (2,), string_val=rank1))]))
    rank2 = ["a", "b", "line\nbreak", "d", "e", "f"]
    w.add_event(tw.event(T0 + 132, 4, summary_values=[tw.value("table", tensor_bytes=tw.tensor(tw.DT_STRING, (3, 2), string_val=rank2))]))
    exp.wall(T0 + 132)
    exp.texts[("table", 3)] = (T0 + 131, markdown_table(rank1, 1))
    exp.texts[("table", 4)] = (T0 + 132, markdown_table(rank2, 2))
    # A plugin trainwatch does not import: counted, not stored.
    w.add_event(tw.event(T0 + 133, 4, summary_values=[tw.value("pr", metadata=tw.plugin_metadata("pr_curves"),
                                                               tensor_bytes=tw.tensor(tw.DT_FLOAT, (1,), float_val=[1.0]))]))
    exp.wall(T0 + 133)
    w.close()


def write_tf1_run(dirpath, exp):
    """TF1 style v1 histograms, two files, and every kind of damage: returns the expected messages."""
    name1 = "events.out.tfevents.1767225700.host.1"
    w = tw.EventFileWriter(os.path.join(dirpath, name1), T0 + 200)
    exp.wall(T0 + 200)
    messages = []
    where = "tf1/run3/" + name1

    def scalar(step, v, t):
        return tw.event(t, step, summary_values=[tw.value("loss", simple_value=v)])

    for step in range(10):
        t = T0 + 201 + step
        w.add_event(scalar(step, f32(5.0 - step / 3), t))
        exp.wall(t)
        exp.scalars.setdefault("loss", {})[step] = (t, f32(5.0 - step / 3))
        if step == 3:
            at, n = w.add_bad_data_crc(scalar(100, 1.0, t))
            messages.append("%s:%d: data checksum mismatch (%d bytes skipped)" % (where, at, n))
        if step == 5:
            at, n = w.add_garbage(b"garbage between records, left by a broken copy!")
            messages.append("%s:%d: length checksum mismatch (%d bytes skipped)" % (where, at, n))
        if step == 7:
            at, n = w.add_bad_length_crc(scalar(200, 1.0, t))
            messages.append("%s:%d: length checksum mismatch (%d bytes skipped)" % (where, at, n))
    # TensorFlow's v1 histogram: empty open buckets at both ends, min/max inside.
    histo = tw.histogram_proto(-0.8, 2.5, 15, 3.0, 20.0, [-1.0, 0.0, 1.0, 3.0, DBL_MAX], [0.0, 4.0, 5.0, 6.0, 0.0])
    w.add_event(tw.event(T0 + 215, 9, summary_values=[tw.value("w", histo=histo)]))
    exp.histograms["w"] = {9: (T0 + 215, [-0.8, 0.0, 1.0, 2.5], [4.0, 5.0, 6.0])}
    histo_unpacked = tw.histogram_proto(0.1, 0.9, 3, 0, 0, [0.0, 0.5, 1.0], [0.0, 1.0, 2.0], packed=False)
    w.add_event(tw.event(T0 + 216, 10, summary_values=[tw.value("w", histo=histo_unpacked)]))
    exp.histograms["w"][10] = (T0 + 216, [0.1, 0.5, 0.9], [1.0, 2.0])
    at = w.add_truncated(scalar(300, 9.0, T0 + 217), 20)
    messages.append("%s:%d: incomplete last record" % (where, at))
    exp.wall(T0 + 216)
    w.close()
    # A second file, later by name: read after the first.
    name2 = "events.out.tfevents.1767225800.host.2"
    w = tw.EventFileWriter(os.path.join(dirpath, name2), T0 + 300)
    exp.wall(T0 + 300)
    for step in range(10, 15):
        t = T0 + 301 + step
        w.add_event(scalar(step, f32(step * 1.5), t))
        exp.wall(t)
        exp.scalars["loss"][step] = (t, f32(step * 1.5))
    w.close()
    return messages


def build_golden(logdir):
    """The golden logdir: {run id: Expected}, the corruption messages, and the restart run's data."""
    runs = {}
    os.makedirs(logdir / "pytorch" / "run1")
    runs["pytorch/run1"] = Expected()
    write_pytorch_run(str(logdir / "pytorch" / "run1" / "events.out.tfevents.1767225600.host.1.0"), runs["pytorch/run1"])
    os.makedirs(logdir / "tf2" / "run2")
    runs["tf2/run2"] = Expected()
    write_tf2_run(str(logdir / "tf2" / "run2" / "events.out.tfevents.1767225700.host.v2"), runs["tf2/run2"])
    os.makedirs(logdir / "tf1" / "run3")
    runs["tf1/run3"] = Expected()
    messages = write_tf1_run(str(logdir / "tf1" / "run3"), runs["tf1/run3"])
    # A file in the logdir itself: the run is named after the logdir.
    root = Expected()
    w = tw.EventFileWriter(str(logdir / "events.out.tfevents.1767226000.host"), T0 + 400)
    root.wall(T0 + 400)
    for step in range(3):
        w.add_event(tw.event(T0 + 401 + step, step, summary_values=[tw.value("top", simple_value=f32(step / 10))]))
        root.wall(T0 + 401 + step)
        root.scalars.setdefault("top", {})[step] = (T0 + 401 + step, f32(step / 10))
    w.close()
    runs[logdir.name] = root
    # Not runs: a directory without event files, a file without "tfevents" in its name.
    os.makedirs(logdir / "empty")
    (logdir / "tf1" / "run3" / "notes.txt").write_text("not an event file")
    return runs, messages


# ---------------------------------------------------------------------------------------------------
# Reading back through the API


def read_scalars(server, project, run, metric):
    doc = server.get_json("/api/v1/series", {"project": project, "run": run, "metric": metric})
    return {p[0]: (p[1], api_number(p[2])) for p in doc["series"][0]["points"]}


def read_histograms(server, project, run, metric):
    doc = server.get_json("/api/v1/histograms", {"project": project, "run": run, "metric": metric})
    return {h["step"]: (h["time"], [float(e) for e in h["edges"]], [float(c) for c in h["counts"]]) for h in doc["histograms"]}


def read_images(server, project, run):
    out = {}
    for im in server.get_json("/api/v1/images", {"project": project, "run": run}):
        blob = server.get(im["url"])
        assert blob.status == 200, blob
        assert hashlib.sha256(blob.body).hexdigest() == im["sha256"]
        out[(im["name"], im["step"], im["index"])] = (im["time"], blob.body, im["width"], im["height"])
    return out


def read_texts(server, project, run):
    return {(t["name"], t["step"]): (t["time"], t["value"]) for t in server.get_json("/api/v1/texts", {"project": project, "run": run})}


def graph_ops(node, out):
    if "op" in node:
        out.append((node["path"], node["op"], node["inputs"]))
    for c in node.get("children", []):
        graph_ops(c, out)
    return out


def assert_run_matches(server, project, run, exp):
    info = server.get_json("/api/v1/run", {"project": project, "run": run})
    assert info["status"] == "finished", info
    assert bits(info["start_time"]) == bits(exp.start), (info["start_time"], exp.start)
    assert bits(info["end_time"]) == bits(exp.end), (info["end_time"], exp.end)
    kinds = {(m["name"], m["kind"]) for m in info["metrics"]}
    assert kinds == ({(t, "scalar") for t in exp.scalars} | {(t, "histogram") for t in exp.histograms} |
                     {(k[0], "image") for k in exp.images} | {(k[0], "text") for k in exp.texts}), kinds
    for tag, want in exp.scalars.items():
        got = read_scalars(server, project, run, tag)
        assert sorted(got) == sorted(want), (run, tag)
        for step, (t, v) in want.items():
            assert bits(got[step][0]) == bits(t), (run, tag, step, got[step], t)
            assert same_value(got[step][1], v), (run, tag, step, got[step], v)
    for tag, want in exp.histograms.items():
        got = read_histograms(server, project, run, tag)
        assert sorted(got) == sorted(want), (run, tag)
        for step, (t, edges, counts) in want.items():
            gt, ge, gc = got[step]
            assert bits(gt) == bits(t), (run, tag, step)
            assert [bits(e) for e in ge] == [bits(e) for e in edges], (run, tag, step, ge, edges)
            assert [bits(c) for c in gc] == [bits(c) for c in counts], (run, tag, step, gc, counts)
    images = read_images(server, project, run)
    assert sorted(images) == sorted(exp.images), (run, sorted(images))
    for k, (t, data, width, height) in exp.images.items():
        assert images[k] == (t, data, width, height), (run, k)
    texts = read_texts(server, project, run)
    assert texts == exp.texts, (run, texts)
    r = server.get("/api/v1/graph", {"project": project, "run": run})
    if exp.graph is None:
        assert r.status == 404, r
    else:
        assert r.status == 200, r
        tree = r.json()
        assert tree["type"] == "GraphDef"
        assert sorted(graph_ops(tree, [])) == sorted(exp.graph)
        # Name scopes become levels of the tree.
        dense = [c for c in tree["children"] if c["name"] == "dense"][0]
        assert dense["type"] == "NameScope" and [c["name"] for c in dense["children"]] == ["kernel", "MatMul", "Relu"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("golden") / "logs"
    os.makedirs(logdir)
    runs, messages = build_golden(logdir)
    return logdir, runs, messages


@pytest.fixture(scope="module")
def imported(module_server, golden, tmp_path_factory):
    logdir, runs, messages = golden
    env = tool_env(tmp_path_factory.mktemp("import-env"))
    rc, report, stderr = run_import(module_server.url, logdir, "golden", env)
    return rc, report, stderr


def test_golden_files_import_to_exactly_the_values_written(module_server, golden, imported):
    logdir, runs, _ = golden
    rc, report, stderr = imported
    assert rc == 0, stderr
    assert report["complete"], report
    assert sorted(r["id"] for r in report["runs"]) == sorted(runs)
    listed = module_server.get_json("/api/v1/runs", {"project": "golden"})
    assert sorted(r["id"] for r in listed["runs"]) == sorted(runs)
    for run, exp in runs.items():
        assert_run_matches(module_server, "golden", run, exp)
    total = report["total"]
    assert total["points"] == sum(len(v) for e in runs.values() for v in e.scalars.values())
    assert total["histograms"] == sum(len(v) for e in runs.values() for v in e.histograms.values())
    assert total["images"] == 3 and total["texts"] == 3 and total["graphs"] == 1
    assert total["skipped"] == {"plugin 'pr_curves'": 1}, total


def test_corrupt_records_are_reported_with_file_and_offset_and_skipped(golden, imported):
    _, runs, messages = golden
    rc, report, _ = imported
    assert rc == 0
    got = report["messages"]
    # Every damage, in file order, with the exact offset; the truncated tail with its offset too.
    assert [m for m in got if m.startswith("tf1/run3/")][:3] == messages[:3], got
    assert any(m.startswith(messages[3]) for m in got), got
    run3 = [r for r in report["runs"] if r["id"] == "tf1/run3"][0]
    assert run3["corrupt"] == 3 and run3["incomplete_tail_bytes"] == 20, run3
    # Nothing of the damaged records arrived: steps 100, 200, 300 were only in them.
    assert all(step < 100 for step in runs["tf1/run3"].scalars["loss"])


def test_human_summary_and_bad_arguments(module_server, golden, tmp_path):
    logdir, _, _ = golden
    env = tool_env(tmp_path)
    proc = subprocess.run([BIN, "import", str(logdir), "--project", "summary", "--server", module_server.url],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert "imported 4 runs into project 'summary'" in out and "B/s, " in out and "points/s" in out, out
    assert "3 corrupt records skipped" in out, out
    assert "data checksum mismatch" in proc.stderr.decode()
    missing = subprocess.run([BIN, "import", str(tmp_path / "nope")], stderr=subprocess.PIPE, env=env, timeout=30)
    assert missing.returncode == 2 and b"is not a directory" in missing.stderr
    os.makedirs(tmp_path / "no-events")
    empty = subprocess.run([BIN, "import", str(tmp_path / "no-events")], stderr=subprocess.PIPE, env=env, timeout=30)
    assert empty.returncode == 2 and b"no event files" in empty.stderr
    for ask in ("--help", "help", "-h"):
        usage = subprocess.run([BIN, ask], stdout=subprocess.PIPE, timeout=30)
        assert usage.returncode == 0 and all(b"\n  %s " % c in usage.stdout for c in (b"import", b"watch", b"export"))


def test_import_exits_nonzero_when_the_server_does_not_acknowledge(golden, tmp_path):
    logdir, _, _ = golden
    env = tool_env(tmp_path)
    from conftest import PortHold
    with PortHold() as nowhere:  # nothing listens there
        url = "http://127.0.0.1:%d" % nowhere.port
        rc, report, stderr = run_import(url, logdir, "nowhere", env, "--timeout", "2s")
    assert rc == 1 and report is None, stderr
    assert "cannot reach the trainwatch server" in stderr, stderr


def test_import_stops_at_once_when_the_server_refuses_the_key(server_factory, golden, tmp_path):
    logdir, _, _ = golden
    keyed = server_factory("--api-key", "s3cret")
    rc, _, stderr = run_import(keyed.url, logdir, "keyed", tool_env(tmp_path), "--api-key", "wrong")
    assert rc == 2 and "refused the API key" in stderr, stderr
    rc, report, stderr = run_import(keyed.url, logdir, "keyed", tool_env(tmp_path), "--api-key", "s3cret")
    assert rc == 0 and report["complete"], stderr
    assert keyed.get("/api/v1/runs", {"project": "keyed"}, headers={"Authorization": "Bearer s3cret"}).json()["total"] == 4


def test_random_bytes_are_reported_and_crash_nothing(module_server, tmp_path):
    """A file of noise (and a valid record hidden inside it) named like an event file."""
    import random
    rng = random.Random(4354)
    logdir = tmp_path / "junk"
    os.makedirs(logdir / "noise")
    good = tw.frame(tw.event(T0, 3, summary_values=[tw.value("found", simple_value=2.5)]))
    noise = bytes(rng.getrandbits(8) for _ in range(5000))
    (logdir / "noise" / "events.out.tfevents.0.noise").write_bytes(noise + good + noise[:40])
    rc, report, stderr = run_import(module_server.url, logdir, "junk", tool_env(tmp_path))
    assert rc == 0, stderr
    run = report["runs"][0]
    assert run["corrupt"] >= 1 and run["records"] == 1 and run["points"] == 1, run
    assert any("length checksum mismatch" in m for m in report["messages"]), report["messages"]
    assert read_scalars(module_server, "junk", "noise", "found") == {3: (T0, 2.5)}
    assert module_server.get("/healthz").status == 200


def test_session_log_start_rewinds_like_tensorboard(module_server, tmp_path):
    """A restart from a checkpoint at step 5: the restarted run writes steps 5-7 again. TensorBoard
    drops the old steps >= 5; trainwatch shows the new timeline and keeps the old points as
    superseded (the server's resume rule)."""
    logdir = tmp_path / "restart"
    os.makedirs(logdir / "r")
    w = tw.EventFileWriter(str(logdir / "r" / "events.out.tfevents.1.host"), T0)
    for step in range(10):
        w.add_event(tw.event(T0 + step, step, summary_values=[tw.value("loss", simple_value=f32(1 + step))]))
    w.add_event(tw.event(T0 + 20, 5, session_status=tw.SESSION_START))
    for step in range(5, 8):
        w.add_event(tw.event(T0 + 20 + step, step, summary_values=[tw.value("loss", simple_value=f32(100 + step))]))
    w.close()
    rc, report, stderr = run_import(module_server.url, logdir, "restart", tool_env(tmp_path))
    assert rc == 0, stderr
    assert report["total"]["session_starts"] == 1
    got = read_scalars(module_server, "restart", "r", "loss")
    want = {s: (T0 + s, f32(1 + s)) for s in range(5)} | {s: (T0 + 20 + s, f32(100 + s)) for s in range(5, 8)}
    assert got == want
    sup = module_server.get_json("/api/v1/series/superseded", {"project": "restart", "run": "r", "metric": "loss"})
    assert sorted((p["point"][0], p["point"][2]) for p in sup["points"]) == [(s, f32(1 + s)) for s in range(5, 10)]


def write_restart_with_a_dropped_tag(path, restart_step):
    """A run that logged `loss` and `acc` at steps 0-9, crashed, and restarted from its checkpoint at
    `restart_step`: a SessionLog START, then only `loss` again, at restart_step .. restart_step+2.
    Returns the events as (kind, step, wall_time, {tag: value}) in file order."""
    events = []
    for step in range(10):
        events.append(("summary", step, T0 + step, {"loss": f32(1 + step), "acc": f32(step / 10)}))
    events.append(("start", restart_step, T0 + 20, {}))
    for step in range(restart_step, restart_step + 3):
        events.append(("summary", step, T0 + 20 + step, {"loss": f32(100 + step)}))
    w = tw.EventFileWriter(str(path), T0)
    for kind, step, wall, values in events:
        if kind == "start":
            w.add_event(tw.event(wall, step, session_status=tw.SESSION_START))
        else:
            w.add_event(tw.event(wall, step, summary_values=[tw.value(t, simple_value=v) for t, v in values.items()]))
    w.close()
    return events


def tensorboard_view(events):
    """What TensorBoard's EventAccumulator keeps (purge_orphaned_data, its default): a SessionLog START
    at step S drops every value at a step >= S, of every tag. Returns (kept, dropped), each
    {tag: {step: (wall_time, value)}}; dropped holds what trainwatch keeps as superseded points."""
    kept, dropped = {}, {}
    for kind, step, wall, values in events:
        if kind == "start":
            for tag, points in kept.items():
                for s in [s for s in points if s >= step]:
                    dropped.setdefault(tag, {})[s] = points.pop(s)
            continue
        for tag, v in values.items():
            kept.setdefault(tag, {})[step] = (wall, v)
    return kept, dropped


def read_superseded(server, project, run, metric):
    doc = server.get_json("/api/v1/series/superseded", {"project": project, "run": run, "metric": metric})
    return {p["point"][0]: (p["point"][1], api_number(p["point"][2])) for p in doc["points"]}


@pytest.mark.parametrize("command", ["import", "watch"])
def test_session_log_start_hides_the_tags_the_restarted_run_never_writes_again(server_factory, tmp_path, command):
    """Only `loss` is written again after the restart at step 5: `acc` at steps 5-9 must disappear
    too, as in TensorBoard, and stay retrievable as superseded points."""
    server = server_factory()
    logdir = tmp_path / "logs"
    os.makedirs(logdir / "r")
    events = write_restart_with_a_dropped_tag(logdir / "r" / "events.out.tfevents.1.host", 5)
    kept, dropped = tensorboard_view(events)
    assert sorted(kept["acc"]) == [0, 1, 2, 3, 4] and sorted(dropped["acc"]) == [5, 6, 7, 8, 9]
    project = "live" if command == "watch" else "restart2"
    if command == "import":
        rc, report, stderr = run_import(server.url, logdir, project, tool_env(tmp_path))
        assert rc == 0, stderr
        assert report["total"]["session_starts"] == 1 and report["total"]["rewinds_failed"] == 0, report
    else:
        watch = Watch(tmp_path, server, logdir, tmp_path / "state" / "watch.json")
        watch.start()
        try:
            wait_for("the new timeline of loss",
                     lambda: loss_points(server, "r") == {s: v for s, (_, v) in kept["loss"].items()})
            assert watch.stop() == 0, watch.text()
        finally:
            if watch.proc and watch.proc.poll() is None:
                watch.proc.kill()
        assert "not hidden" not in watch.text(), watch.text()
    for tag in ("loss", "acc"):
        assert read_scalars(server, project, "r", tag) == kept[tag], tag
        assert read_superseded(server, project, "r", tag) == dropped[tag], tag
    metrics = {m["name"]: m for m in server.get_json("/api/v1/run", {"project": project, "run": "r"})["metrics"]}
    assert metrics["acc"]["count"] == 5 and metrics["acc"]["last_step"] == 4, metrics["acc"]
    assert metrics["acc"]["latest"][0] == 4 and metrics["acc"]["timelines"] == 2, metrics["acc"]
    # The rewind is in the store: the same after a kill -9 and a restart of the server.
    server.restart(kill=True)
    for tag in ("loss", "acc"):
        assert read_scalars(server, project, "r", tag) == kept[tag], tag
        assert read_superseded(server, project, "r", tag) == dropped[tag], tag


def write_rerun_in_a_second_file(run_dir):
    """A trial run twice into one run directory, as AlgoPerf's preempted trials are: the first file
    holds steps 0-9, the second starts again at step 0 (no SessionLog). `global_step` and
    `preemption_count` are identical in both runs; `loss` differs; `acc` is identical but the re-run
    writes it first at step 4; `eval` only the first run writes. One event per value, as
    SummaryWriter writes them. Returns both files' events as (step, wall_time, {tag: value})."""
    first, second = [], []
    for step in range(10):
        first.append((step, T0 + step, {"global_step": float(step), "preemption_count": 0.0,
                                        "loss": f32(1 + step), "acc": f32(step / 10)}))
        if step % 5 == 0:
            first.append((step, T0 + step, {"eval": f32(step / 100)}))
    for step in range(6):
        values = {"global_step": float(step), "preemption_count": 0.0, "loss": f32(50 + step)}
        if step >= 4:
            values["acc"] = f32(step / 10)
        second.append((step, T0 + 100 + step, values))
    for name, events in (("events.out.tfevents.1.host", first), ("events.out.tfevents.2.host", second)):
        w = tw.EventFileWriter(str(run_dir / name), T0 if events is first else T0 + 100)
        for step, wall, values in events:
            for tag, v in values.items():
                w.add_event(tw.event(wall, step, summary_values=[tw.value(tag, simple_value=v)]))
        w.close()
    return first + second


def tensorboard_purge_view(events):
    """What TensorBoard shows of values arriving in this order: per tag, a value at step s evicts
    every value of that tag at steps >= s ("preemption", whatever the values). Returns (kept,
    superseded): superseded holds what trainwatch keeps hidden: the evicted points of a step that
    went back, and a point its step rewrote with a different value (an identical one changes
    nothing)."""
    kept, superseded = {}, {}
    for step, wall, values in events:
        for tag, v in values.items():
            points = kept.setdefault(tag, {})
            newest = max(points) if points else None
            if newest is not None and step < newest:
                for s in [s for s in points if s >= step]:
                    superseded.setdefault(tag, {})[s] = points.pop(s)
            elif step in points and bits(points[step][1]) == bits(v):
                continue
            elif step in points:
                superseded.setdefault(tag, {})[step] = points.pop(step)
            points[step] = (wall, v)
    return kept, superseded


@pytest.mark.parametrize("command", ["import", "watch"])
def test_a_step_that_goes_back_purges_the_tag_like_tensorboard_even_for_identical_values(server_factory, tmp_path, command):
    """A second event file restarting at step 0: every tag whose step goes back starts a new
    timeline there, even where the value is identical (global_step, preemption_count), so no chart
    interleaves the two runs; the old points stay queryable as superseded. `watch` is stopped between
    the two files, so the tags' newest steps must survive in its state file."""
    server = server_factory()
    logdir = tmp_path / "logs"
    os.makedirs(logdir / "r")
    events = write_rerun_in_a_second_file(logdir / "r")
    kept, superseded = tensorboard_purge_view(events)
    assert sorted(kept["global_step"]) == list(range(6)) and sorted(superseded["global_step"]) == list(range(10))
    assert sorted(kept["acc"]) == list(range(6)) and sorted(superseded["acc"]) == list(range(4, 10))
    assert sorted(kept["eval"]) == [0, 5] and "eval" not in superseded
    project = "live" if command == "watch" else "purge"
    if command == "import":
        rc, report, stderr = run_import(server.url, logdir, project, tool_env(tmp_path))
        assert rc == 0, stderr
        # global_step, preemption_count and loss at step 0; acc at step 4.
        assert report["total"]["steps_back"] == 4 and report["total"]["rewinds_failed"] == 0, report
    else:
        second = logdir / "r" / "events.out.tfevents.2.host"
        os.rename(second, tmp_path / "second")
        state = tmp_path / "state" / "watch.json"
        watch = Watch(tmp_path, server, logdir, state)
        try:
            watch.start()
            wait_for("the first run", lambda: len(loss_points(server, "r")) == 10)
            assert watch.stop() == 0, watch.text()
            saved = json.loads(state.read_text())["runs"]["r"]["steps"]
            assert saved == {"global_step": 9, "preemption_count": 9, "loss": 9, "acc": 9, "eval": 5}, saved
            os.rename(tmp_path / "second", second)
            watch.start()
            wait_for("the re-run", lambda: loss_points(server, "r") == {s: v for s, (_, v) in kept["loss"].items()})
            assert watch.stop() == 0, watch.text()
        finally:
            if watch.proc and watch.proc.poll() is None:
                watch.proc.kill()
        assert "not hidden" not in watch.text(), watch.text()
        assert json.loads(state.read_text())["runs"]["r"]["steps"]["global_step"] == 5

    def check():
        for tag in kept:
            assert read_scalars(server, project, "r", tag) == kept[tag], tag
            assert read_superseded(server, project, "r", tag) == superseded.get(tag, {}), tag
    check()
    # The series rewinds are in the server's log and store: the same after a kill -9 and a restart.
    server.restart(kill=True)
    check()
    # The export holds what TensorBoard shows.
    out = tmp_path / "exported"
    proc = subprocess.run([BIN, "export", "r", "--tfevents", str(out), "--project", project, "--server", server.url],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    exported = {}
    for e in tfevents_reader.read_events(str(out / os.listdir(out)[0])):
        for v in e.get("summary", []):
            exported.setdefault(v["tag"], {})[e["step"]] = v["simple_value"]
    assert exported == {tag: {s: v for s, (_, v) in points.items()} for tag, points in kept.items()}


def test_runs_rewind_endpoint(module_server):
    """POST /api/v1/runs/rewind: the answer (checked against the schema), idempotence, and the
    refusals, each naming what is wrong."""
    import jsonschema
    from conftest import REPO
    with open(os.path.join(REPO, "schema", "api.schema.json")) as f:
        schema = json.load(f)
    s = module_server
    s.write_ok("\n".join('{"project":"rw","run":"a","step":%d,"metrics":{"x":%d,"y":%d}}' % (i, i, -i) for i in range(6)))
    s.write_ok('{"project":"rw","run":"a","step":1,"metrics":{"z":1}}')

    def rewind(body, run="a", project="rw"):
        params = {"project": project}
        if run is not None:
            params["run"] = run
        return s.post("/api/v1/runs/rewind", body, params=params)

    r = rewind('{"step": 3}')
    assert r.status == 200, r
    answer = r.json()
    jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/RunRewind"}).validate(answer)
    assert answer == {"project": "rw", "run": "a", "step": 3, "series_rewound": 2}, answer  # x and y, not z
    values = lambda metric: {step: v for step, (_, v) in read_scalars(s, "rw", "a", metric).items()}  # noqa: E731
    assert values("x") == {0: 0, 1: 1, 2: 2} and values("y") == {0: 0, 1: -1, 2: -2}
    assert values("z") == {1: 1}
    assert rewind('{"step": 3}').json()["series_rewound"] == 0  # nothing left to hide: a no-op
    for body, why in [('{"step": -1}', "field 'step' must be an integer"), ('{"step": 2.5}', "field 'step' must be an integer"),
                      ('{"step": "3"}', "field 'step' must be an integer"), ('{}', "field 'step' is required"),
                      ('{"step": 1, "tag": "x"}', "unknown field 'tag'"), ('[3]', "must be a JSON object"),
                      ('not json', "invalid JSON at byte")]:
        r = rewind(body)
        assert r.status == 400 and why in r.json()["error"], (body, r)
    r = rewind('{"step": 1}', run=None)
    assert r.status == 400 and "'run' is required" in r.json()["error"], r
    r = rewind('{"step": 1}', run="nope")
    assert r.status == 404 and "no run 'nope' in project 'rw'" in r.json()["error"], r
    assert s.get("/api/v1/run", {"project": "rw", "run": "nope"}).status == 404  # not created either
    assert values("x") == {0: 0, 1: 1, 2: 2}  # the refusals changed nothing


# ---------------------------------------------------------------------------------------------------
# Export and the round trip


def test_export_writes_files_an_independent_reader_decodes_and_the_round_trip_is_identical(module_server, golden, imported, tmp_path):
    _, runs, _ = golden
    assert imported[0] == 0
    env = tool_env(tmp_path)
    out = tmp_path / "exported"
    for run in runs:
        proc = subprocess.run([BIN, "export", run, "--tfevents", str(out / run), "--project", "golden",
                               "--server", module_server.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        rounded = sum(1 for values in runs[run].scalars.values() for _, v in values.values()
                      if math.isfinite(v) and f32(v) != v)
        assert (b"(%d rounded to float32)" % rounded in proc.stdout) == (rounded > 0), (run, rounded, proc.stdout)
        files = os.listdir(out / run)
        assert len(files) == 1 and files[0].startswith("events.out.tfevents.") and files[0].endswith(".trainwatch"), files
        # The independent reader checks every CRC and decodes what TensorBoard would.
        events = tfevents_reader.read_events(str(out / run / files[0]))
        assert events[0]["file_version"] == "brain.Event:2"
        assert bits(events[0]["wall_time"]) == bits(runs[run].start)
        values = [v for e in events for v in e.get("summary", [])]
        scalar_tags = set(runs[run].scalars)
        for v in values:
            if v["tag"] in scalar_tags:
                assert "simple_value" in v, v
            elif v["tag"] in runs[run].histograms:
                assert "histo" in v and v["histo"]["bucket"][0] == 0.0, v
            elif v["tag"] in {k[0] for k in runs[run].texts}:
                assert v["tensor"]["dtype"] == tw.DT_STRING and v["tensor"]["dims"] == []
        texts = [v for v in values if v["tag"] in {k[0] for k in runs[run].texts}]
        if texts:
            assert texts[0]["plugin"] == "text" and all("plugin" not in t for t in texts[1:]), texts
        images_v1 = [v for v in values if "image" in v]
        for v in images_v1:
            _, data, width, height = runs[run].images[(v["tag"], [e for e in events if v in e.get("summary", [])][0]["step"], 0)]
            assert (v["image"]["encoded"], v["image"]["width"], v["image"]["height"]) == (data, width, height)
        graphs = [e["graph_def"] for e in events if "graph_def" in e]
        if runs[run].graph:
            assert sorted((n["name"], n["op"], n["inputs"]) for n in graphs[0]) == sorted(runs[run].graph)
    # Import what was exported into another project: the same series, histograms, images, texts, graph.
    rc, report, stderr = run_import(module_server.url, out, "roundtrip", env)
    assert rc == 0, stderr
    assert report["total"]["corrupt"] == 0 and report["total"]["value_errors"] == 0, report
    for run, exp in runs.items():
        a = module_server.get_json("/api/v1/run", {"project": "golden", "run": run})
        b = module_server.get_json("/api/v1/run", {"project": "roundtrip", "run": run})
        assert bits(a["start_time"]) == bits(b["start_time"])
        assert [(m["name"], m["kind"], m["count"]) for m in a["metrics"]] == [(m["name"], m["kind"], m["count"]) for m in b["metrics"]]
        for tag in exp.scalars:
            # TensorBoard's scalars are float32 (simple_value): float32 values come back bit for bit,
            # doubles rounded to the nearest float32, as export said it would.
            ga, gb = read_scalars(module_server, "golden", run, tag), read_scalars(module_server, "roundtrip", run, tag)
            assert sorted(ga) == sorted(gb)
            assert all(bits(ga[s][0]) == bits(gb[s][0]) and same_value(f32(ga[s][1]), gb[s][1]) for s in ga), (run, tag)
        for tag in exp.histograms:
            assert read_histograms(module_server, "golden", run, tag) == read_histograms(module_server, "roundtrip", run, tag)
        assert read_images(module_server, "golden", run) == read_images(module_server, "roundtrip", run)
        assert read_texts(module_server, "golden", run) == read_texts(module_server, "roundtrip", run)
        ga = module_server.get("/api/v1/graph", {"project": "golden", "run": run})
        gb = module_server.get("/api/v1/graph", {"project": "roundtrip", "run": run})
        assert ga.status == gb.status and (ga.status != 200 or ga.json() == gb.json())


def test_export_of_sdk_data_rounds_doubles_and_names_modules_by_path(module_server, tmp_path):
    """A run written by the SDK's wire format (doubles, an SDK module tree, an image with index 1)
    exported for TensorBoard: float32 values, one graph node per module, the v2 images tensor."""
    from harness import ingest_pb
    pb = ingest_pb.load()
    req = pb.WriteRequest()
    batch = req.runs.add()
    batch.project, batch.run = "sdk", "mlp"
    batch.steps.extend([0, 1, 2])
    batch.times.extend([T0, T0 + 1, T0 + 2])
    col = batch.metrics.add()
    col.name = "loss"
    col.values.extend([0.1, 0.5, math.nan])
    batch.metadata.start_time = T0
    batch.metadata.graph_json = json.dumps({"name": "", "type": "Net", "params": [], "children": [
        {"name": "fc1", "path": "fc1", "type": "Linear", "params": [{"name": "weight", "shape": [4, 2]}], "children": []},
        {"name": "block", "path": "block", "type": "Sequential", "params": [], "children": [
            {"name": "0", "path": "block.0", "type": "ReLU", "params": [], "children": []}]}]})
    png = tw.tiny_png(3, 2, seed=9)
    for index in (0, 1):
        im = batch.images.add()
        im.name, im.step, im.time, im.index, im.data = "pred", 1, T0 + 1, index, png
    r = ingest_pb.post(module_server, req)
    assert r.status == 200, r
    out = tmp_path / "mlp"
    proc = subprocess.run([BIN, "export", "mlp", "--tfevents", str(out), "--project", "sdk", "--server", module_server.url],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"3 points (1 rounded to float32)" in proc.stdout, proc.stdout  # 0.1; 0.5 and NaN are float32
    events = tfevents_reader.read_events(str(out / os.listdir(out)[0]))
    assert events[0]["file_version"] == "brain.Event:2" and bits(events[0]["wall_time"]) == bits(T0)
    nodes = [e["graph_def"] for e in events if "graph_def" in e][0]
    assert [(n["name"], n["op"]) for n in nodes] == [("fc1", "Linear"), ("block", "Sequential"), ("block/0", "ReLU")]
    loss = {e["step"]: v["simple_value"] for e in events for v in e.get("summary", []) if v["tag"] == "loss"}
    assert loss[0] == f32(0.1) and loss[1] == f32(0.5) and math.isnan(loss[2]), loss
    images = [v for e in events for v in e.get("summary", []) if v["tag"] == "pred"]
    assert len(images) == 1 and images[0]["plugin"] == "images", images
    assert images[0]["tensor"]["dims"] == [4] and images[0]["tensor"]["string_val"] == [b"3", b"2", png, png]


def test_export_of_an_unknown_run_fails_with_the_reason(module_server, tmp_path):
    proc = subprocess.run([BIN, "export", "nope", "--tfevents", str(tmp_path / "x"), "--project", "golden",
                           "--server", module_server.url], stderr=subprocess.PIPE, env=tool_env(tmp_path), timeout=60)
    assert proc.returncode == 1
    assert b"404" in proc.stderr and b"nope" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------------------
# watch


def wait_for(what, probe, deadline_s=15.0):
    """Polls `probe` until it returns a truthy value; fails after a generous deadline."""
    t0 = time.monotonic()
    got = wait_until(probe, what, timeout=deadline_s)
    return got, time.monotonic() - t0  # printed for the curious, never asserted


def spooled_bytes(spool):
    """Bytes in the SDK spool below `spool` (docs/format/spool.md): what the client could not deliver."""
    return sum(p.stat().st_size for p in spool.rglob("*.seg")) if spool.exists() else 0


class Watch:
    def __init__(self, tmp_path, server, logdir, state):
        self.args = [BIN, "watch", str(logdir), "--project", "live", "--server", server.url, "--state", str(state),
                     "--interval", "100ms"]
        self.env = tool_env(tmp_path)
        self.log = tmp_path / "watch.log"
        self.proc = None

    def start(self):
        self.out = open(self.log, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.out, stderr=self.out, env=self.env)
        wait_for("watch to start", lambda: b"watching" in self.log.read_bytes())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.out.close()
        return rc

    def text(self):
        return self.log.read_text()


def loss_points(server, run):
    r = server.get("/api/v1/series", {"project": "live", "run": run, "metric": "loss"})
    if r.status != 200:
        return {}
    series = r.json()["series"][0]
    return {p[0]: api_number(p[2]) for p in series.get("points", [])}


def scalar_event(step, v):
    return tw.event(T0 + step, step, summary_values=[tw.value("loss", simple_value=v)])


def test_watch_tails_growing_files_alerts_and_restarts_without_duplicates(server_factory, tmp_path):
    server = server_factory()
    logdir = tmp_path / "live"
    os.makedirs(logdir / "exp1")
    watch = Watch(tmp_path, server, logdir, tmp_path / "state" / "watch.json")
    watch.start()
    try:
        f1 = tw.EventFileWriter(str(logdir / "exp1" / "events.out.tfevents.1.host"), T0)
        want = {}
        for step in range(5):
            f1.add_event(scalar_event(step, f32(1 / (step + 1))))
            want[step] = f32(1 / (step + 1))
        _, seconds = wait_for("the first points", lambda: loss_points(server, "exp1") == want)
        print("first points visible after %.3f s" % seconds)
        # A growing file, including a record written in two pieces.
        for step in range(5, 10):
            f1.add_event(scalar_event(step, f32(step)))
            want[step] = f32(step)
        record = tw.frame(scalar_event(10, 10.5))
        f1.f.write(record[:7])
        f1.f.flush()
        wait_for("steps 5-9", lambda: loss_points(server, "exp1") == want)
        # Two records in another run, the second written once the first is in: the poll that reads
        # it began after the half record was on disk, read that too, and must have left it.
        os.makedirs(logdir / "marker")
        m = tw.EventFileWriter(str(logdir / "marker" / "events.out.tfevents.1.host"), T0)
        for step in range(2):
            m.add_event(scalar_event(step, float(step)))
            wait_for("marker step %d" % step, lambda: len(loss_points(server, "marker")) == step + 1)
        m.close()
        assert loss_points(server, "exp1") == want
        f1.f.write(record[7:])
        f1.f.flush()
        want[10] = 10.5
        _, seconds = wait_for("the record completed later", lambda: loss_points(server, "exp1") == want)
        print("appended point visible after %.3f s" % seconds)
        # A NaN fires the server's nan alert.
        f1.add_event(scalar_event(11, math.nan))
        want[11] = math.nan
        alerts, seconds = wait_for("the NaN alert", lambda: server.get_json(
            "/api/v1/alerts", {"project": "live", "run": "exp1", "kind": "nan"})["alerts"])
        assert alerts[0]["step"] == 11 and alerts[0]["metric"] == "loss", alerts
        print("NaN alert after %.3f s" % seconds)
        # Rotation: the writer starts a new file in the same run; a new run directory appears.
        f1.close()
        f2 = tw.EventFileWriter(str(logdir / "exp1" / "events.out.tfevents.2.host"), T0 + 50)
        for step in range(12, 15):
            f2.add_event(scalar_event(step, f32(step / 4)))
            want[step] = f32(step / 4)
        os.makedirs(logdir / "exp2")
        g = tw.EventFileWriter(str(logdir / "exp2" / "events.out.tfevents.3.host"), T0 + 60)
        g.add_event(scalar_event(0, 42.0))
        wait_for("the rotated file", lambda: loss_points(server, "exp1").keys() == want.keys())
        wait_for("the new run", lambda: loss_points(server, "exp2") == {0: 42.0})
        assert watch.stop() == 0, watch.text()
        state = json.loads((tmp_path / "state" / "watch.json").read_text())
        offsets = {f["path"]: f["offset"] for f in state["files"]}
        assert offsets["exp1/events.out.tfevents.2.host"] == os.path.getsize(logdir / "exp1" / "events.out.tfevents.2.host")
        unchanged_before = server.metric_value("trainwatch_points_unchanged_total")
        written_before = server.metric_value("trainwatch_points_written_total")
        # While watch is down the file grows; the restart continues at the saved offsets.
        for step in range(15, 18):
            f2.add_event(scalar_event(step, f32(step * 3)))
            want[step] = f32(step * 3)
        watch.start()
        wait_for("the points written while stopped", lambda: loss_points(server, "exp1").keys() == want.keys())
        got = loss_points(server, "exp1")
        assert all(same_value(got[s], want[s]) for s in want), (got, want)
        # Nothing was sent twice: only the three new points were written, none arrived again unchanged.
        assert server.metric_value("trainwatch_points_written_total") - written_before == 3
        assert server.metric_value("trainwatch_points_unchanged_total") == unchanged_before
        # Replacing a file (a new inode) makes watch read it again from the start.
        replacement = logdir / "exp2" / "replacement.partial"  # no "tfevents" in the name: not a file to watch
        g.close()
        h = tw.EventFileWriter(str(replacement), T0 + 60)
        h.add_event(scalar_event(0, 42.0))
        h.add_event(scalar_event(1, 43.0))
        h.close()
        os.rename(replacement, logdir / "exp2" / "events.out.tfevents.3.host")
        wait_for("the replaced file", lambda: loss_points(server, "exp2") == {0: 42.0, 1: 43.0})
        info = server.get_json("/api/v1/run", {"project": "live", "run": "exp1"})
        assert info["status"] == "running" and bits(info["start_time"]) == bits(T0), info
        assert watch.stop() == 0
        assert "replaced by a new file" in watch.text(), watch.text()
    finally:
        if watch.proc and watch.proc.poll() is None:
            watch.proc.kill()


def test_watch_saves_offsets_only_once_the_server_has_the_data(server_factory, tmp_path):
    """kill -9 of the server while watch reads: the saved offset stays at the last acknowledged
    record until the restarted server has taken the rest."""
    server = server_factory()
    logdir = tmp_path / "live"
    os.makedirs(logdir / "r")
    state_path = tmp_path / "state.json"
    watch = Watch(tmp_path, server, logdir, state_path)
    watch.start()
    try:
        path = logdir / "r" / "events.out.tfevents.1.host"
        f = tw.EventFileWriter(str(path), T0)
        for step in range(5):
            f.add_event(scalar_event(step, float(step)))
        wait_for("the first points", lambda: len(loss_points(server, "r")) == 5)
        acked_size = os.path.getsize(path)

        def saved_offset():
            try:
                return {e["path"]: e["offset"] for e in json.loads(state_path.read_text())["files"]}.get("r/events.out.tfevents.1.host")
            except (OSError, ValueError):
                return None
        wait_for("the acknowledged offset to be saved", lambda: saved_offset() == acked_size)
        spool = tmp_path / "spool"
        assert spooled_bytes(spool) == 0  # everything so far was delivered
        server.kill9()
        for step in range(5, 10):
            f.add_event(scalar_event(step, float(step)))
        # Watch read the new records and could not deliver them: its client spooled them.
        wait_for("the new records to be spooled", lambda: spooled_bytes(spool) > 0 and "cannot reach" in watch.text())
        assert saved_offset() == acked_size
        server.start()
        wait_for("the points read while the server was down", lambda: len(loss_points(server, "r")) == 10, 30)
        wait_for("the offset to advance", lambda: saved_offset() == os.path.getsize(path), 30)
        assert loss_points(server, "r") == {s: float(s) for s in range(10)}
        assert watch.stop() == 0
    finally:
        if watch.proc and watch.proc.poll() is None:
            watch.proc.kill()

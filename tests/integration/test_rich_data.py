"""Images, texts and histograms against the real binary: written through the Python SDK (in a child
process, as a training script would) and read back through the API byte for byte; one stored blob per
content; refusals that name run, tag, step and why while the rest of the batch is kept; the blob
endpoint's caching headers; kill -9; and blobs freed when the last run referring to them is deleted.

Needs the Python package of the build (<build>/python beside <build>/bin/trainwatch, or
TRAINWATCH_PYTHONPATH) for the SDK tests.
"""
import hashlib
import json
import os
import subprocess
import time

import numpy as np

from harness import ingest_pb
from harness import png_decode
from conftest import REPO, http

PYTHON = os.environ.get("TRAINWATCH_PYTHON", "/usr/bin/python3")
BUILD_PYTHON = os.environ.get("TRAINWATCH_PYTHONPATH", os.path.join(os.path.dirname(os.path.dirname(
    os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch")))), "python"))

# A whole, valid 1x1 GIF: "already encoded bytes" of a format the SDK does not produce itself.
GIF = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,"
       b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
NOTES = ["# Epoch 0\n\n| metric | value |\n|---|---|\n| loss | 0.5 |\n", "ünïcødé ∑ \U0001F600\nline two"]

# The training script. Each scenario logs through the SDK, finishes its runs (so that everything is
# acknowledged), and writes what it sent to `out`: the arrays, and for each image the bytes the SDK
# encoded (its own encoder, deterministic) or was given.
CHILD = r'''
import json, os, sys, warnings
import numpy as np
import trainwatch as tw
from trainwatch import _histogram, _image

args = json.loads(sys.argv[1])
out = args["out"]
caught = []
warnings.showwarning = lambda message, *a, **k: caught.append(str(message))
sent = []  # [name, step, index, file of the bytes]

def keep(run_id, name, step, images):
    for index, data in enumerate(images):
        path = os.path.join(out, "%s-%s-%d-%d.bin" % (run_id, name, step, index))
        with open(path, "wb") as f:
            f.write(data)
        sent.append([run_id, name, step, index, path])

def init(run_id):
    return tw.init(project="rich", id=run_id, server=args["server"], system_metrics=False)

rng = np.random.default_rng(7)
if args["scenario"] == "round_trip":
    import torch
    run = init("r1")
    arrays = {"rgb": rng.integers(0, 256, (17, 23, 3), dtype=np.uint8), "grey": rng.random((9, 11)),
              "rgba": rng.integers(0, 256, (4, 6, 5), dtype=np.uint8),
              "batch": rng.integers(0, 256, (2, 4, 4, 3), dtype=np.uint8)}
    tensor = torch.rand(3, 10, 12)
    arrays["tensor"] = tensor.numpy()
    run.log({"loss": 0.5}, step=0)
    run.log_image("rgb", arrays["rgb"], step=0, caption="random rgb")
    run.log_image("grey", arrays["grey"], step=1)
    run.log_image("rgba", arrays["rgba"], step=2, dataformats="CHW")
    run.log_image("batch", arrays["batch"], step=3)
    run.log_image("tensor", tensor, step=4, dataformats="CHW")
    with open(args["png"], "rb") as f:
        encoded = [f.read(), bytes.fromhex(args["gif"])]
    run.log_image("encoded", encoded, step=5)
    keep("r1", "rgb", 0, _image.encode(arrays["rgb"]))
    keep("r1", "grey", 1, _image.encode(arrays["grey"]))
    keep("r1", "rgba", 2, _image.encode(arrays["rgba"], "CHW"))
    keep("r1", "batch", 3, _image.encode(arrays["batch"]))
    keep("r1", "tensor", 4, _image.encode(tensor, "CHW"))
    keep("r1", "encoded", 5, encoded)
    for step, text in enumerate(args["notes"]):
        run.log_text("notes", text, step=step)
    values = rng.normal(size=1000)
    run.log_histogram("weights", values, step=0, bins=16)
    run.log_histogram("given", ([0.0, 0.5, 2.0], [3.0, 4.5]), step=1)
    edges, counts = _histogram.from_values(values, 16)
    np.savez(os.path.join(out, "arrays.npz"), edges=edges, counts=counts, **arrays)
    run.finish()
elif args["scenario"] == "shared":
    same = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    unique = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    a, b = init("a"), init("b")
    for step in range(100):
        a.log_image("samples", same, step=step)
        b.log_image("samples", same, step=step)
    a.log_image("unique", unique, step=0)
    keep("a", "samples", 0, _image.encode(same))
    keep("a", "unique", 0, _image.encode(unique))
    b.finish("crashed")  # never deleted by the disk guard (it takes finished runs only)
    a.finish()
elif args["scenario"] == "oversize":
    run = init("big")
    run.log({"loss": 0.25}, step=0)
    run.log_image("noise", rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), step=0)
    small = np.zeros((4, 4, 3), np.uint8)
    run.log_image("small", small, step=0)
    keep("big", "small", 0, _image.encode(small))
    run.finish()
print(json.dumps({"sent": sent, "warnings": caught}))
'''


def run_sdk(tmp_path, server, scenario, **args):
    out = tmp_path / ("sdk-" + scenario)
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, TRAINWATCH_SPOOL_DIR=str(tmp_path / "spool"))
    args = dict(args, server=server.url, scenario=scenario, out=str(out))
    child = subprocess.run([PYTHON, "-c", CHILD, json.dumps(args)], env=env, capture_output=True, timeout=120)
    assert child.returncode == 0, "the SDK script failed (is the Python SDK built in %s?):\n%s" % (
        BUILD_PYTHON, child.stderr.decode())
    report = json.loads(child.stdout.decode().strip().splitlines()[-1])
    return report, out


def read(path):
    with open(path, "rb") as f:
        return f.read()


def images(server, run, **params):
    return server.get_json("/api/v1/images", dict(project="rich", run=run, **params))


def blob(server, entry):
    r = server.get(entry["url"])
    assert r.status == 200, r
    return r.body


def expected_pixels(arrays):
    """What each logged array must decode to, by the SDK's documented rules (channels last; floats
    in [0, 1] times 255, rounded)."""
    # In float64, as the SDK computes: float32 arithmetic rounds a value near .5 the other way now
    # and then (a random tensor made this test fail once).
    to_uint8 = lambda a: np.rint(np.clip(np.asarray(a, np.float64), 0, 1) * 255).astype(np.uint8)  # noqa: E731
    return {("rgb", 0): arrays["rgb"], ("grey", 0): to_uint8(arrays["grey"])[:, :, None],
            ("rgba", 0): np.moveaxis(arrays["rgba"], 0, -1), ("batch", 0): arrays["batch"][0],
            ("batch", 1): arrays["batch"][1], ("tensor", 0): np.moveaxis(to_uint8(arrays["tensor"]), 0, -1)}


def test_images_texts_and_histograms_through_the_sdk_come_back_exactly_and_survive_kill_9(server, tmp_path):
    plain = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    (tmp_path / "plain.png").write_bytes(png_decode.encode_plain(plain))
    report, out = run_sdk(tmp_path, server, "round_trip", png=str(tmp_path / "plain.png"), gif=GIF.hex(),
                          notes=NOTES)
    assert report["warnings"] == [], report["warnings"]
    arrays = np.load(out / "arrays.npz")
    pixels = expected_pixels(arrays)
    pixels[("encoded", 0)] = plain
    sent = {(name, step, index): read(path) for _, name, step, index, path in report["sent"]}

    def check():
        listed = images(server, "r1")
        assert [(e["name"], e["step"], e["index"]) for e in listed] == sorted(sent), listed
        for e in listed:
            data = sent[(e["name"], e["step"], e["index"])]
            assert blob(server, e) == data, e  # byte for byte what the SDK sent
            assert e["sha256"] == hashlib.sha256(data).hexdigest() and e["size"] == len(data)
            assert e["url"] == "/api/v1/blobs/" + e["sha256"]
            if (e["name"], e["index"]) in pixels:
                decoded = png_decode.decode(data)
                assert np.array_equal(decoded, pixels[(e["name"], e["index"])]), e["name"]
                assert (e["mime"], e["width"], e["height"]) == ("image/png", decoded.shape[1], decoded.shape[0])
        gif = [e for e in listed if e["mime"] == "image/gif"]
        assert [(g["name"], g["index"], g["width"], g["height"]) for g in gif] == [("encoded", 1, 1, 1)]
        assert listed[[e["name"] for e in listed].index("rgb")]["caption"] == "random rgb"
        texts = server.get_json("/api/v1/texts", {"project": "rich", "run": "r1"})
        assert [(t["name"], t["step"], t["value"]) for t in texts] == [("notes", i, v) for i, v in enumerate(NOTES)]
        h = server.get_json("/api/v1/histograms", {"project": "rich", "run": "r1", "metric": "weights"})["histograms"]
        assert len(h) == 1
        assert np.array_equal(np.array(h[0]["edges"]), arrays["edges"])
        assert np.array_equal(np.array(h[0]["counts"]), arrays["counts"])
        given = server.get_json("/api/v1/histograms", {"project": "rich", "run": "r1", "metric": "given"})
        assert given["histograms"][0]["edges"] == [0.0, 0.5, 2.0]
        assert given["histograms"][0]["counts"] == [3.0, 4.5]
        kinds = {m["name"]: m["kind"] for m in server.get_json("/api/v1/metrics", {"project": "rich", "run": "r1"})}
        assert kinds == {"loss": "scalar", "rgb": "image", "grey": "image", "rgba": "image", "batch": "image",
                         "tensor": "image", "encoded": "image", "notes": "text", "weights": "histogram",
                         "given": "histogram"}

    check()
    server.restart(kill=True)  # everything above was acknowledged: none of it may be lost
    check()
    # Range, tag and limit filters.
    assert [e["name"] for e in images(server, "r1", **{"from": 3, "to": 4})] == ["batch", "batch", "tensor"]
    assert [(e["step"], e["index"]) for e in images(server, "r1", name="batch", limit=1)] == [(3, 0)]
    assert images(server, "r1", name="absent") == []
    assert server.get("/api/v1/images", {"project": "rich", "run": "nope"}).status == 404
    assert server.get("/api/v1/images", {"project": "rich"}).status == 400
    assert server.get("/api/v1/texts", {"project": "rich", "run": "r1", "limit": "0"}).status == 400


def test_one_blob_per_content_and_deleting_a_run_frees_only_its_own(server, server_factory, tmp_path):
    report, _ = run_sdk(tmp_path, server, "shared")
    assert report["warnings"] == [], report["warnings"]
    sent = {name: read(path) for _, name, _, _, path in report["sent"]}
    a, b = images(server, "a"), images(server, "b")
    assert len(a) == 101 and len(b) == 100
    same = {e["sha256"] for e in a + b if e["name"] == "samples"}
    assert same == {hashlib.sha256(sent["samples"]).hexdigest()}
    assert server.metric_value("trainwatch_image_blobs") == 2  # 200 references, two contents
    assert server.metric_value("trainwatch_image_blob_bytes") == len(sent["samples"]) + len(sent["unique"])
    unique = next(e for e in a if e["name"] == "unique")
    assert blob(server, unique) == sent["unique"]

    # The disk guard deletes finished and crashed runs once the volume is "full" and their last
    # activity is older than --disk-guard-min-age (0 here): run "a", finished before the guard
    # starts; "b" (crashed) has a point logged with a wall time a day ahead, so its last activity is
    # still to come and it stays.
    ahead = '{"project": "rich", "run": "b", "step": 1000, "time": %f, "metrics": {"loss": 1.0}}' % (time.time() + 86400)
    assert server.write_ok([ahead])["points_accepted"] == 1
    server.terminate()
    guarded = server_factory("--disk-guard-percent", "0.01", "--disk-guard-min-age", "0s", data_dir=server.data_dir)
    assert "run=a" in guarded.stderr_text(), guarded.tail()
    assert guarded.get("/api/v1/images", {"project": "rich", "run": "a"}).status == 404
    assert guarded.get(unique["url"]).status == 404, "no run refers to it any more"
    assert blob(guarded, b[0]) == sent["samples"], "run b still refers to it"
    assert len(images(guarded, "b")) == 100
    assert guarded.metric_value("trainwatch_image_blobs") == 1
    assert guarded.metric_value("trainwatch_image_blob_bytes") == len(sent["samples"])
    guarded.restart(kill=True)
    assert guarded.get(unique["url"]).status == 404
    assert guarded.metric_value("trainwatch_image_blobs") == 1


def test_oversize_and_non_image_bytes_are_refused_by_name_and_the_rest_is_kept(server_factory, tmp_path):
    server = server_factory("--max-image-bytes", "4096")
    pb = ingest_pb.load()
    small = png_decode.encode_plain(np.zeros((2, 2, 3), np.uint8))
    noise = png_decode.encode_plain(np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    req = pb.WriteRequest()
    batch = req.runs.add(project="rich", run="mixed")
    batch.steps.extend([3])
    batch.metrics.add(name="loss", values=[0.5])
    batch.images.add(name="ok", step=3, data=small, caption="kept")
    batch.images.add(name="big", step=3, index=1, data=noise)
    batch.images.add(name="junk", step=3, data=b"<html><body>not an image</body></html>")
    batch.images.add(name="truncated", step=4, data=small[:20])
    batch.texts.add(name="notes", step=3, value="kept too")
    r = ingest_pb.post(server, req)
    assert r.status == 400, r  # partial success, as for invalid points
    body = r.json()
    assert body["points_accepted"] == 1
    errors = [e["error"] for e in body["errors"]]
    assert errors == [
        "runs[0] (run 'mixed'): images[1] (tag 'big', step 3, index 1): image is %d bytes; the limit is 4096 "
        "(--max-image-bytes)" % len(noise),
        "runs[0] (run 'mixed'): images[2] (tag 'junk', step 3, index 0): not a PNG, JPEG, GIF or WebP image "
        "(first bytes: 3c 68 74 6d 6c 3e 3c 62)",
        "runs[0] (run 'mixed'): images[3] (tag 'truncated', step 4, index 0): PNG image: truncated before the "
        "end of the IHDR chunk"], errors
    listed = images(server, "mixed")
    assert [(e["name"], e["caption"]) for e in listed] == [("ok", "kept")]
    assert blob(server, listed[0]) == small
    assert server.get_json("/api/v1/texts", {"project": "rich", "run": "mixed"})[0]["value"] == "kept too"
    series = server.get_json("/api/v1/series", {"project": "rich", "run": "mixed", "metric": "loss"})
    assert series["series"][0]["points"][0][2] == 0.5
    # A batch whose only content is refused creates no run.
    req = pb.WriteRequest()
    req.runs.add(project="rich", run="nothing").images.add(name="junk", step=0, data=b"GIF8")
    assert ingest_pb.post(server, req).status == 400
    assert server.get("/api/v1/run", {"project": "rich", "run": "nothing"}).status == 404

    # Through the SDK (gRPC): the refusal comes back as a warning naming the image; the rest stays.
    report, _ = run_sdk(tmp_path, server, "oversize")
    refused = [w for w in report["warnings"] if "(--max-image-bytes)" in w]
    assert len(refused) == 1 and "run 'big'" in refused[0] and "tag 'noise', step 0" in refused[0], report
    assert [e["name"] for e in images(server, "big")] == ["small"]
    assert server.get_json("/api/v1/series", {"project": "rich", "run": "big", "metric": "loss"})["series"][0][
        "points"][0][2] == 0.25


def test_blobs_are_served_with_caching_headers_and_the_api_key_rule(server_factory):
    server = server_factory("--api-key", "sekret")
    auth = {"Authorization": "Bearer sekret"}
    pb = ingest_pb.load()
    png = png_decode.encode_plain(np.full((3, 2, 4), 200, np.uint8))
    req = pb.WriteRequest()
    req.runs.add(project="rich", run="r").images.add(name="x", step=0, data=png)
    r = server.post("/api/v1/write", req.SerializeToString(),
                    headers=dict(auth, **{"Content-Type": "application/x-protobuf"}))
    assert r.status == 200, r
    sha = hashlib.sha256(png).hexdigest()
    url = "/api/v1/blobs/" + sha
    r = server.get(url, headers=auth)
    assert r.status == 200 and r.body == png
    assert r.headers["Content-Type"] == "image/png"
    assert r.headers["ETag"] == '"%s"' % sha
    assert r.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    for tags in ('"%s"' % sha, 'W/"other", "%s"' % sha, "*"):
        r = server.get(url, headers=dict(auth, **{"If-None-Match": tags}))
        assert r.status == 304 and r.body == b"", (tags, r)
        assert r.headers["ETag"] == '"%s"' % sha and "Content-Type" not in r.headers
    assert server.get(url, headers=dict(auth, **{"If-None-Match": '"other"'})).status == 200
    assert server.get(url.upper().replace("/API/V1/BLOBS/", "/api/v1/blobs/"), headers=auth).body == png
    assert server.get(url).status == 401
    # An <img src> cannot send the header: it passes a short-lived token, never the key.
    r = server.get(url, {"key": "sekret"})
    assert r.status == 401 and "token" in r.json()["error"], r
    token = server.post("/api/v1/tokens", b"", headers=auth).json()["token"]
    assert server.get(url, {"token": token}).body == png
    head = http("HEAD", server.url + url, headers=auth)
    assert head.status == 200 and head.body == b"" and head.headers["Content-Length"] == str(len(png))
    assert server.post(url, b"", headers=auth).status == 405
    r = server.get("/api/v1/blobs/" + "0" * 64, headers=auth)
    assert r.status == 404 and "no stored image" in r.json()["error"]
    for bad in ("abc", "g" * 64, sha + "00", ""):
        r = server.get("/api/v1/blobs/" + bad, headers=auth)
        assert r.status == 400 and "expected 64 hex digits" in r.json()["error"], (bad, r)

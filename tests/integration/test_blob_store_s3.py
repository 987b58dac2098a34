"""Image blobs in an S3-compatible object store (--blob-store s3://, docs/blob_store.md), against a
real S3-protocol server: npm's s3rver (tests/s3rver, installed by scripts/install-deps.sh), started
here on 127.0.0.1 port 0. (s3rver 3.7 checks the access key, not SigV4 signatures: those are
checked against AWS's published examples in src/blob/sigv4_test.cc.)

Images logged through the Python SDK are acknowledged, uploaded to the bucket under
prefix/<sha256>, dropped from the local store, and served by /api/v1/blobs/<sha> from the bucket,
across restarts (SIGTERM and kill -9). With the endpoint down, writes are still acknowledged (the
blobs wait in the local store, counted by trainwatch_blob_s3_pending), reads of moved blobs get a
clear 503 and nothing crashes; once the endpoint is back the waiting blobs arrive.

Needs the Python package of the build (<build>/python beside <build>/bin/trainwatch) for the SDK.
"""
import hashlib
import json
import os
import re
import subprocess
import threading

import pytest

from conftest import REPO
from harness.wait import wait_until
from tls_certs import TestCa

S3RVER = os.path.join(REPO, "tests", "s3rver", "node_modules", ".bin", "s3rver")
BUCKET = "tw-blobs"
PREFIX = "team/images"
PYTHON = os.environ.get("TRAINWATCH_PYTHON", "/usr/bin/python3")
BUILD_PYTHON = os.environ.get("TRAINWATCH_PYTHONPATH", os.path.join(os.path.dirname(os.path.dirname(
    os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch")))), "python"))

# Logs `count` distinct random images (seeded) on steps first.. and writes the encoded bytes the
# SDK sent to `out` (its encoder is deterministic), one file per image.
CHILD = r'''
import json, os, sys
import numpy as np
import trainwatch as tw
from trainwatch import _image
args = json.loads(sys.argv[1])
rng = np.random.default_rng(args["seed"])
run = tw.init(project="s3", id=args["run"], server=args["server"], system_metrics=False)
sent = []
for i in range(args["count"]):
    step = args["first"] + i
    pixels = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.log_image("samples", pixels, step=step)
    data = _image.encode(pixels)[0]
    path = os.path.join(args["out"], "%s-%d.png" % (args["run"], step))
    with open(path, "wb") as f:
        f.write(data)
    sent.append(path)
run.finish()
print(json.dumps(sent))
'''


class S3rver:
    """One s3rver process on 127.0.0.1 with the bucket configured; restartable on the same port and
    directory (its objects are files there: <dir>/<bucket>/<key>._S3rver_object). With `tls` (an
    Issued certificate) it speaks HTTPS."""

    def __init__(self, directory, tls=None):
        self.directory = str(directory)
        self.port = 0
        self.proc = None
        self.tls = tls

    def start(self):
        if not os.access(S3RVER, os.X_OK):
            pytest.fail("%s is missing: scripts/install-deps.sh runs npm ci in tests/s3rver" % S3RVER)
        tls = ["--key", str(self.tls.key), "--cert", str(self.tls.cert)] if self.tls else []
        self.proc = subprocess.Popen([S3RVER, "-d", self.directory, "-a", "127.0.0.1", "-p", str(self.port),
                                      "--configure-bucket", BUCKET, "--no-vhost-buckets"] + tls,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        for line in self.proc.stdout:  # blocks on its output until it says where it listens
            m = re.search(r"S3rver listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        assert self.port, "s3rver exited before listening"
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    @property
    def endpoint(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def object_bytes(self, key):
        path = os.path.join(self.directory, BUCKET, key + "._S3rver_object")
        if not os.path.exists(path):
            return None
        with open(path, "rb") as f:
            return f.read()


@pytest.fixture
def s3(tmp_path):
    server = S3rver(tmp_path / "s3rver").start()
    yield server
    server.stop()


@pytest.fixture
def credentials(monkeypatch):
    """s3rver's built-in account; the server reads them from its environment (inherited)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")


def log_images(tmp_path, server, run, count, first=0, seed=1):
    out = tmp_path / ("sdk-%s-%d" % (run, first))
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, TRAINWATCH_SPOOL_DIR=str(tmp_path / "spool"))
    args = dict(server=server.url, run=run, count=count, first=first, seed=seed, out=str(out))
    child = subprocess.run([PYTHON, "-c", CHILD, json.dumps(args)], env=env, capture_output=True, timeout=120)
    assert child.returncode == 0, "the SDK script failed (is the Python SDK built in %s?):\n%s" % (
        BUILD_PYTHON, child.stderr.decode())
    sent = []
    for path in json.loads(child.stdout.decode().strip().splitlines()[-1]):
        with open(path, "rb") as f:
            sent.append(f.read())
    return sent


def listed(server, run):
    return {e["sha256"]: e for e in server.get_json("/api/v1/images", {"project": "s3", "run": run})}


def metric(server, name):
    return server.metric_value(name)


def test_images_go_to_the_bucket_are_served_from_it_and_survive_restarts(server_factory, s3, credentials,
                                                                          tmp_path):
    server = server_factory("--blob-store", "s3://%s/%s" % (BUCKET, PREFIX), "--s3-endpoint", s3.endpoint)
    sent = log_images(tmp_path, server, "r1", 5)
    shas = [hashlib.sha256(data).hexdigest() for data in sent]
    assert set(listed(server, "r1")) == set(shas)

    # Each blob lands in the bucket under prefix/<sha256>, byte for byte, and leaves the local store.
    wait_until(lambda: all(s3.object_bytes("%s/%s" % (PREFIX, sha)) for sha in shas), "the blobs in the bucket")
    for sha, data in zip(shas, sent):
        assert s3.object_bytes("%s/%s" % (PREFIX, sha)) == data
    wait_until(lambda: metric(server, "trainwatch_blob_s3_uploads_total") >= 5 and
               metric(server, "trainwatch_blob_s3_pending") == 0, "the uploads counted")

    def served_from_the_bucket():
        before = metric(server, "trainwatch_blob_s3_reads_total")
        for sha, data in zip(shas, sent):
            r = server.get("/api/v1/blobs/" + sha)
            assert r.status == 200, r
            assert r.body == data and r.headers.get("Content-Type") == "image/png"
        assert metric(server, "trainwatch_blob_s3_reads_total") == before + len(shas)

    served_from_the_bucket()
    server.restart()
    served_from_the_bucket()
    server.restart(kill=True)
    served_from_the_bucket()
    assert set(listed(server, "r1")) == set(shas)
    assert "S3RVER" not in "".join(server.stderr_text(i) for i in range(len(server.log_paths)))


def test_endpoint_down_keeps_writes_acknowledged_and_the_backlog_arrives_when_it_is_back(server_factory, s3,
                                                                                         credentials, tmp_path):
    server = server_factory("--blob-store", "s3://%s/%s" % (BUCKET, PREFIX), "--s3-endpoint", s3.endpoint)
    first = log_images(tmp_path, server, "r1", 2)
    first_shas = [hashlib.sha256(d).hexdigest() for d in first]
    wait_until(lambda: metric(server, "trainwatch_blob_s3_pending") == 0 and
               metric(server, "trainwatch_blob_s3_uploads_total") >= 2, "the first uploads")

    s3.stop()
    # Moved blobs cannot be read: a clear 503, and the server stays up.
    r = server.get("/api/v1/blobs/" + first_shas[0])
    assert r.status == 503, r
    assert "cannot reach " + s3.endpoint in r.text, r.text
    # Writes are still acknowledged (the SDK's finish returns once they are) and readable locally.
    later = log_images(tmp_path, server, "r2", 3, first=10, seed=2)
    later_shas = [hashlib.sha256(d).hexdigest() for d in later]
    assert set(listed(server, "r2")) == set(later_shas)
    for sha, data in zip(later_shas, later):
        assert server.get("/api/v1/blobs/" + sha).body == data
    wait_until(lambda: metric(server, "trainwatch_blob_s3_upload_errors_total") >= 1, "a failed upload")
    wait_until(lambda: metric(server, "trainwatch_blob_s3_pending") == 3, "the backlog counted")
    assert "upload failed" in server.stderr_text()
    assert server.alive()

    # A restart with the endpoint still down loses nothing either.
    server.restart(kill=True)
    for sha, data in zip(later_shas, later):
        assert server.get("/api/v1/blobs/" + sha).body == data

    s3.start()  # the same port and directory
    wait_until(lambda: all(s3.object_bytes("%s/%s" % (PREFIX, sha)) for sha in later_shas), "the backlog")
    wait_until(lambda: metric(server, "trainwatch_blob_s3_pending") == 0, "the backlog uploaded")
    for sha, data in zip(first_shas + later_shas, first + later):
        r = server.get("/api/v1/blobs/" + sha)
        assert r.status == 200 and r.body == data, r


def test_credentials_the_store_refuses_keep_the_images_local_and_say_why(server_factory, s3, monkeypatch,
                                                                          tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDNOTAKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    server = server_factory("--blob-store", "s3://%s" % BUCKET, "--s3-endpoint", s3.endpoint)
    sent = log_images(tmp_path, server, "r1", 1)
    sha = hashlib.sha256(sent[0]).hexdigest()
    wait_until(lambda: metric(server, "trainwatch_blob_s3_upload_errors_total") >= 1, "a refused upload")
    log = server.stderr_text()
    assert "HTTP 403 InvalidAccessKeyId" in log, log
    assert "AKIDNOTAKEY" not in log and "not-the-secret" not in log
    assert s3.object_bytes(sha) is None
    assert server.get("/api/v1/blobs/" + sha).body == sent[0]  # still held locally


def test_bad_blob_store_settings_are_refused_at_start(server_factory, credentials, monkeypatch):
    for args, says in [(("--blob-store", "gs://bucket"), "s3://bucket"),
                       (("--blob-store", "s3://Bad_Bucket"), "bucket name"),
                       (("--blob-store", "s3://bucket", "--s3-endpoint", "ftp://x"), "http:// or https://"),
                       (("--blob-store", "s3://bucket", "--s3-tls-verify", "maybe"), "true or false")]:
        server = server_factory(*args, start=False)
        with pytest.raises(RuntimeError) as e:
            server.start()
        assert says in str(e.value), (args, str(e.value))
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    server = server_factory("--blob-store", "s3://bucket", "--s3-endpoint", "http://127.0.0.1:1", start=False)
    with pytest.raises(RuntimeError) as e:
        server.start()
    assert "AWS_SECRET_ACCESS_KEY" in str(e.value)


def test_an_https_endpoint_is_verified_against_the_ca_file(server_factory, credentials, tmp_path):
    ca = TestCa(tmp_path / "ca")
    s3 = S3rver(tmp_path / "s3rver-tls", tls=ca.issue("s3", directory=tmp_path / "s3cert")).start()
    try:
        # Without the CA the endpoint's certificate is not trusted: nothing is uploaded, the
        # images stay local, and the log says why.
        untrusting = server_factory("--blob-store", "s3://" + BUCKET, "--s3-endpoint", s3.endpoint)
        sent = log_images(tmp_path, untrusting, "r1", 1)
        sha = hashlib.sha256(sent[0]).hexdigest()
        wait_until(lambda: metric(untrusting, "trainwatch_blob_s3_upload_errors_total") >= 1, "a refused upload")
        assert "certificate" in untrusting.stderr_text(), untrusting.stderr_text()
        assert s3.object_bytes(sha) is None
        assert untrusting.get("/api/v1/blobs/" + sha).body == sent[0]
        untrusting.stop()
        # With it, the same data directory's blob goes up.
        trusting = server_factory("--blob-store", "s3://" + BUCKET, "--s3-endpoint", s3.endpoint,
                                  "--s3-ca-file", str(ca.cert), data_dir=untrusting.data_dir)
        wait_until(lambda: s3.object_bytes(sha) == sent[0], "the blob in the bucket over HTTPS")
        wait_until(lambda: metric(trusting, "trainwatch_blob_s3_pending") == 0, "nothing pending")
        assert trusting.get("/api/v1/blobs/" + sha).body == sent[0]
    finally:
        s3.stop()

"""The wire schema's Python classes, generated at test time from proto/trainwatch/v1/ingest.proto:
the one protobuf encoder (and decoder) of the Python tests.

`load()` runs `protoc` (Debian's protobuf-compiler, which scripts/install-deps.sh installs) into a
temporary directory and imports the generated `ingest_pb2`. A missing protoc or protobuf runtime is a
broken test machine, not a reason to skip: load() fails the test that needs it, saying what is
missing. Also: `post(server, request)`, which sends a WriteRequest to POST /api/v1/write.
"""
import functools
import importlib.util
import os
import shutil
import subprocess
import tempfile

import pytest

from .server import REPO

PROTO_DIR = os.path.join(REPO, "proto")
PROTO = "trainwatch/v1/ingest.proto"
CONTENT_TYPE = {"Content-Type": "application/x-protobuf"}


@functools.lru_cache(maxsize=None)
def _generate():
    """(module, None) or (None, why it cannot be generated)."""
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return None, "the protobuf Python runtime is not installed (install-deps.sh installs python3-protobuf)"
    protoc = shutil.which("protoc")
    if protoc is None:
        return None, "no protoc on PATH (install-deps.sh installs protobuf-compiler)"
    out = tempfile.mkdtemp(prefix="trainwatch_pb_")
    result = subprocess.run([protoc, "-I", PROTO_DIR, "--python_out", out, PROTO], capture_output=True, text=True)
    if result.returncode != 0:
        return None, "protoc failed: " + result.stderr
    # Loaded by path under a name of its own: a `trainwatch` package (the SDK) may be importable too.
    path = os.path.join(out, "trainwatch", "v1", "ingest_pb2.py")
    try:
        spec = importlib.util.spec_from_file_location("trainwatch_test_ingest_pb2", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module, None
    except Exception as e:  # a generated module the runtime cannot load (version skew)
        return None, "cannot import the generated ingest_pb2: %r" % (e,)


def load():
    """The generated module; fails the calling test when it cannot be generated."""
    module, why = _generate()
    if module is None:
        pytest.fail(why, pytrace=False)
    return module


def post(server, request, **kw):
    """POSTs a WriteRequest (a message, or bytes) to /api/v1/write."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
    return server.post("/api/v1/write", body, headers=CONTENT_TYPE, **kw)

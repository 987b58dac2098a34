"""The wire schema's Python classes, generated at test time from proto/trainwatch/v1/ingest.proto.

`load()` runs protoc (grpc_tools.protoc when installed, else a `protoc` binary on PATH) into a temporary
directory and imports the generated `ingest_pb2`; a test that needs it is skipped, with the reason,
when neither protoc nor the protobuf runtime is available. Also: `post(server, request)`, which sends a
WriteRequest to POST /api/v1/write.
"""
import functools
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO_DIR = os.path.join(REPO, "proto")
PROTO = "trainwatch/v1/ingest.proto"
CONTENT_TYPE = {"Content-Type": "application/x-protobuf"}


def _protoc_command():
    try:
        importlib.import_module("grpc_tools.protoc")
        return [sys.executable, "-m", "grpc_tools.protoc"]
    except ImportError:
        pass
    protoc = shutil.which("protoc")
    return [protoc] if protoc else None


@functools.lru_cache(maxsize=None)
def _generate():
    """(module, None) or (None, why it cannot be generated)."""
    try:
        importlib.import_module("google.protobuf")
    except ImportError:
        return None, "the protobuf Python runtime is not installed"
    command = _protoc_command()
    if command is None:
        return None, "neither grpc_tools nor a protoc binary is available"
    out = tempfile.mkdtemp(prefix="trainwatch_pb_")
    result = subprocess.run(command + ["-I", PROTO_DIR, "--python_out", out, PROTO],
                            capture_output=True, text=True)
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
    module, why = _generate()
    if module is None:
        pytest.skip(why)
    return module


def post(server, request, **kw):
    """POSTs a WriteRequest (a message, or bytes) to /api/v1/write."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
    return server.post("/api/v1/write", body, headers=CONTENT_TYPE, **kw)

"""TLS on the gRPC ingest and in the SDK (issue 13), against real server processes and a throw-away CA
(tls_certs.py): a Python gRPC client over TLS, plaintext refused, mutual TLS, certificate rotation
while a stream stays open, the Python SDK (in a child process) over gRPC-TLS and HTTPS, and what
GET /api/v1/info advertises to a client on another address.

The HTTP part of TLS (curl, HSTS, plain HTTP to the TLS port, SIGHUP) is tested in test_tls.py.
"""
import json
import os
import queue
import shutil
import socket
import ssl
import subprocess
import time

import grpc  # python3-grpcio (install-deps.sh)
import pytest

from harness import ingest_pb
from harness import wait_until
from conftest import BIN, http, tls_client_context
from test_sdk_delivery import BUILD_PYTHON, PYTHON, assert_every_step_once
from tls_certs import TestCa

WRITE_METHOD = "/trainwatch.v1.Ingest/Write"
T0 = 1_700_000_000.0


@pytest.fixture
def ca(tmp_path):
    return TestCa(tmp_path / "ca")


def tls_server(server_factory, ca, *extra, client_ca=False, **kw):
    """A server whose HTTP and gRPC ports speak TLS with a fresh certificate from `ca` (and with
    client_ca, demand client certificates from it: the fixture's own requests present one)."""
    cert = ca.issue("server", hosts=["127.0.0.1", "localhost"], directory=ca.dir / "server-files")
    args = ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key), *extra]
    if client_ca:
        client = ca.issue("fixture-client", client=True)
        args += ["--tls-client-ca", str(ca.cert)]
        kw.update(client_cert=client.cert, client_key=client.key)
    server = server_factory(*args, ca_file=ca.cert, **kw)
    server.cert = cert
    return server


def grpc_target(server):
    return "127.0.0.1:%d" % server.grpc_port


def secure_channel(server, ca, client=None):
    credentials = grpc.ssl_channel_credentials(
        root_certificates=ca.cert.read_bytes(),
        private_key=client.key.read_bytes() if client else None,
        certificate_chain=client.cert.read_bytes() if client else None)
    return grpc.secure_channel(grpc_target(server), credentials)


def batch(pb, writer, sequence, run, steps):
    request = pb.WriteRequest(writer_id=writer, sequence=sequence)
    b = request.runs.add(project="tls", run=run)
    b.steps.extend(steps)
    b.times.extend(T0 + s for s in steps)
    b.metrics.add(name="loss", rows=list(range(len(steps))), values=[s / 4.0 for s in steps])
    return request


class WriteStream:
    """One open Ingest/Write stream: send() a WriteRequest, get its WriteAck back."""

    def __init__(self, channel, pb):
        self._requests = queue.Queue()
        call = channel.stream_stream(WRITE_METHOD, request_serializer=pb.WriteRequest.SerializeToString,
                                     response_deserializer=pb.WriteAck.FromString)
        # The deadline only keeps a broken test from hanging; nothing here is timed.
        self._acks = call(iter(self._requests.get, None), timeout=300)

    def send(self, request):
        self._requests.put(request)
        return next(self._acks)

    def close(self):
        self._requests.put(None)
        for _ in self._acks:
            pass


def write_once(channel, pb, request):
    stream = WriteStream(channel, pb)
    try:
        return stream.send(request)
    finally:
        stream.close()


def loss_steps(server, run):
    """The steps of the run's loss series ([] for a run the server does not know)."""
    r = server.get("/api/v1/series", {"project": "tls", "run": run, "metric": "loss"})
    if r.status == 404:
        return []
    assert r.status == 200, r
    series = r.json()["series"]
    return [p[0] for p in series[0]["points"]] if series else []


def knows_run(server, project, run):
    r = server.get("/api/v1/run", {"project": project, "run": run})
    assert r.status in (200, 404), r
    return r.status == 200


def peer_serial(port, ca):
    """The serial number of the certificate a new TLS connection to `port` is shown (ALPN h2, as a
    gRPC client offers), verified against `ca`."""
    context = tls_client_context(ca.cert)
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return int(tls.getpeercert()["serialNumber"], 16)


def replace_pair(issued, into):
    """Puts a new key and certificate in place of the server's files (each by an atomic rename)."""
    for source, target in ((issued.key, into.key), (issued.cert, into.cert)):
        temporary = str(target) + ".new"
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)


def test_grpc_over_tls_writes_and_plaintext_is_refused(server_factory, ca):
    pb = ingest_pb.load()
    server = tls_server(server_factory, ca)
    assert server.get_json("/api/v1/info")["grpc_tls"] is True
    with secure_channel(server, ca) as channel:
        ack = write_once(channel, pb, batch(pb, "w-tls", 1, "r1", range(0, 50)))
    assert not ack.refused and ack.points_accepted == 50, ack
    assert loss_steps(server, "r1") == list(range(50))

    # A plaintext client gets no stream: the handshake fails and the RPC ends UNAVAILABLE.
    with grpc.insecure_channel(grpc_target(server)) as plain:
        with pytest.raises(grpc.RpcError) as refused:
            write_once(plain, pb, batch(pb, "w-plain", 1, "r-plain", range(0, 5)))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
    # ... nothing of it was stored, and the server goes on serving TLS clients.
    assert server.alive()
    with secure_channel(server, ca) as channel:
        ack = write_once(channel, pb, batch(pb, "w-tls", 2, "r1", range(50, 60)))
    assert ack.points_accepted == 10, ack
    assert loss_steps(server, "r1") == list(range(60))
    assert not knows_run(server, "tls", "r-plain")


def test_grpc_mutual_tls_refuses_a_client_without_a_certificate(server_factory, ca, tmp_path):
    pb = ingest_pb.load()
    server = tls_server(server_factory, ca, client_ca=True)
    with secure_channel(server, ca) as anonymous:
        with pytest.raises(grpc.RpcError) as refused:
            write_once(anonymous, pb, batch(pb, "w-anon", 1, "r-anon", range(0, 5)))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value

    # A certificate from another CA is refused as well.
    stranger = TestCa(tmp_path / "other-ca").issue("stranger", client=True)
    with secure_channel(server, ca, client=stranger) as foreign:
        with pytest.raises(grpc.RpcError) as refused:
            write_once(foreign, pb, batch(pb, "w-foreign", 1, "r-anon", range(0, 5)))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value

    client = ca.issue("trainer-7", client=True)
    with secure_channel(server, ca, client=client) as channel:
        ack = write_once(channel, pb, batch(pb, "w-mtls", 1, "r-mtls", range(0, 20)))
    assert ack.points_accepted == 20, ack
    assert loss_steps(server, "r-mtls") == list(range(20))
    assert not knows_run(server, "tls", "r-anon")


def test_grpc_certificate_rotation_keeps_open_streams(server_factory, ca):
    pb = ingest_pb.load()
    server = tls_server(server_factory, ca)
    first = server.cert.serial
    assert peer_serial(server.grpc_port, ca) == first

    channel = secure_channel(server, ca)
    stream = WriteStream(channel, pb)
    assert stream.send(batch(pb, "w-rot", 1, "rot", range(0, 10))).points_accepted == 10

    renewed = ca.issue("server-renewed", hosts=["127.0.0.1", "localhost"], directory=ca.dir / "renewed")
    assert renewed.serial != first
    replace_pair(renewed, server.cert)
    # The server re-reads the files every few seconds (ingest/grpc_tls.h): wait for a new
    # connection to be shown the renewed certificate.
    def renewed_shown():
        serial = peer_serial(server.grpc_port, ca)
        assert serial in (first, renewed.serial), serial
        return serial == renewed.serial
    wait_until(renewed_shown, "the gRPC port to show the renewed certificate", timeout=120)

    # The stream opened before the rotation still carries batches ...
    assert stream.send(batch(pb, "w-rot", 2, "rot", range(10, 20))).points_accepted == 10
    stream.close()
    channel.close()
    # ... and new clients verify the renewed certificate against the same CA.
    with secure_channel(server, ca) as fresh:
        assert write_once(fresh, pb, batch(pb, "w-rot2", 1, "rot", range(20, 30))).points_accepted == 10
    assert loss_steps(server, "rot") == list(range(30))


def test_a_key_that_is_not_the_certificates_stops_the_server_at_start(server_factory, ca):
    cert = ca.issue("server", hosts=["127.0.0.1"])
    other = ca.issue("other", hosts=["127.0.0.1"])
    server = server_factory("--tls-cert", str(cert.cert), "--tls-key", str(other.key), ca_file=ca.cert, start=False)
    proc = server.spawn()
    assert proc.wait(timeout=60) != 0
    log = server.stderr_text()
    assert str(other.key) in log and "key" in log, log


# The training process: logs `steps` steps of four metrics, waits at most `flush` seconds until they
# are acknowledged and reports the client's counters then (with the transport it used) and after
# finish(); prints one JSON report.
CHILD = r'''
import json, sys, warnings
import trainwatch as tw

args = json.loads(sys.argv[1])
caught = []
warnings.showwarning = lambda message, *a, **k: caught.append(str(message))
run = tw.init(project="sdk", id=args["run"], server=args["server"], system_metrics=False, **args["options"])
for step in range(args["steps"]):
    run.log({"loss": 1.0 / (step + 1), "acc": step * 1e-6, "lr": 0.5 ** (step % 7), "tick": float(step)},
            step=step)
delivered = run.flush(args["flush"])
stats = run.stats()
run.finish()
print(json.dumps({"delivered": delivered, "stats": stats, "final": run.stats(), "warnings": caught}))
'''


def run_child(tmp_path, server, run, steps, options, env=None, flush=120):
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, TRAINWATCH_SPOOL_DIR=str(tmp_path / "spool"), **(env or {}))
    for name in ("TRAINWATCH_API_KEY", "TRAINWATCH_TLS_CA", "TRAINWATCH_TLS_CERT", "TRAINWATCH_TLS_KEY"):
        if name not in (env or {}) and name in os.environ:
            del env[name]
    args = {"server": server.url, "run": run, "steps": steps, "options": options, "flush": flush}
    child = subprocess.run([PYTHON, "-c", CHILD, json.dumps(args)], env=env, capture_output=True, timeout=300)
    assert child.returncode == 0, child.stderr.decode()
    return json.loads(child.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("transport", ["auto", "http"])
def test_sdk_delivers_every_point_over_tls(server_factory, ca, tmp_path, transport):
    server = tls_server(server_factory, ca)
    assert server.url.startswith("https://")
    steps = 3000
    report = run_child(tmp_path, server, "sdk-" + transport, steps,
                       {"tls_ca_file": str(ca.cert), "transport": transport})
    assert report["delivered"], report
    assert report["stats"]["transport"] == ("grpc" if transport == "auto" else "http"), report
    assert report["stats"]["points_acked"] == 4 * steps, report
    assert report["warnings"] == [], report
    assert_every_step_once(server, "sdk-" + transport, steps)


def test_sdk_mutual_tls_from_the_environment(server_factory, ca, tmp_path):
    server = tls_server(server_factory, ca, client_ca=True)
    client = ca.issue("sdk-client", client=True)
    steps = 500
    report = run_child(tmp_path, server, "sdk-mtls", steps, {},
                       env={"TRAINWATCH_TLS_CA": str(ca.cert), "TRAINWATCH_TLS_CERT": str(client.cert),
                            "TRAINWATCH_TLS_KEY": str(client.key)})
    assert report["delivered"] and report["stats"]["transport"] == "grpc", report
    assert_every_step_once(server, "sdk-mtls", steps)


def test_sdk_never_downgrades_https_to_a_configured_plaintext_grpc_port(server_factory, ca, tmp_path):
    """With an https:// server, a configured grpc_target is spoken to over TLS only: here it is a
    plaintext server's port, so the handshake fails and the SDK delivers over HTTPS; the plaintext
    server never sees the run."""
    tls = tls_server(server_factory, ca)
    plain = server_factory()
    report = run_child(tmp_path, tls, "sdk-target", 200,
                       {"tls_ca_file": str(ca.cert), "grpc_target": "127.0.0.1:%d" % plain.grpc_port})
    assert report["delivered"] and report["stats"]["transport"] == "http", report
    assert_every_step_once(tls, "sdk-target", 200)
    assert not knows_run(plain, "sdk", "sdk-target")


class FakeInfoServer:
    """An HTTPS server (certificate from `ca`) that advertises a plaintext gRPC ingest at `grpc`
    and takes POST /api/v1/write like a server would, counting the batches."""

    def __init__(self, ca, grpc):
        import http.server
        import threading

        cert = ca.issue("fake", hosts=["127.0.0.1"], directory=ca.dir / "fake")
        fake = self
        self.writes = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/api/v1/info":
                    self.reply({"version": "fake", "grpc": grpc, "grpc_tls": False, "api_key_required": False})
                else:
                    self.reply({"status": "ok"})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                fake.writes += 1
                self.reply({"points_accepted": 0, "points_rejected": 0})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert.cert), str(cert.key))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = "https://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_sdk_never_downgrades_https_to_an_advertised_plaintext_grpc_ingest(server_factory, ca, tmp_path):
    """An https:// server that advertises plaintext gRPC (grpc_tls false; a real plaintext ingest
    there, which would store what reached it): the SDK sends over HTTPS instead."""
    plain = server_factory()
    fake = FakeInfoServer(ca, "127.0.0.1:%d" % plain.grpc_port)
    try:
        report = run_child(tmp_path, fake, "sdk-advertised", 100, {"tls_ca_file": str(ca.cert)})
    finally:
        fake.close()
    assert report["delivered"] and report["stats"]["transport"] == "http", report
    assert fake.writes > 0
    assert not knows_run(plain, "sdk", "sdk-advertised")


def test_sdk_refuses_to_send_its_key_in_clear_text_to_another_machine(tmp_path):
    """No server needed: the refusal comes before any connection (192.0.2.1 is never contacted)."""

    class Remote:
        url = "http://192.0.2.1:8080"

    report = run_child(tmp_path, Remote, "sdk-clear", 10, {"api_key": "k-secret", "flush_timeout_seconds": 5},
                       flush=0)
    assert not report["delivered"], report
    assert report["final"]["points_acked"] == 0, report
    assert "refusing to send the API key in clear text" in report["final"]["last_error"], report
    assert any("use an https:// server URL" in w for w in report["warnings"]), report


def non_loopback_ipv4():
    """This machine's address on its default route, or None (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


def test_info_advertises_no_loopback_grpc_address_to_another_machine(server_factory, ca):
    """The HTTP port on every address, gRPC on loopback only: a client from this machine's own
    non-loopback address is told no gRPC address (it could not use 127.0.0.1), one on loopback
    is told it. The decision itself is unit-tested in src/api/server_info_test.cc."""
    address = non_loopback_ipv4()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    cert = ca.issue("server-any", hosts=["127.0.0.1", "localhost", address], directory=ca.dir / "any")
    server = server_factory("--tls-cert", str(cert.cert), "--tls-key", str(cert.key), "--api-key", "k-info",
                            ca_file=ca.cert, start=False)
    # After the harness's --listen 127.0.0.1:0: the last flag wins.
    server.extra_args += ["--listen", "0.0.0.0:0"]
    server.start()
    headers = {"Authorization": "Bearer k-info"}
    local = http("GET", server.url + "/api/v1/info", headers=headers, context=server.ssl_context).json()
    assert local["grpc"] == "127.0.0.1:%d" % server.grpc_port and local["grpc_tls"] is True, local
    remote = http("GET", "https://%s:%d/api/v1/info" % (address, server.port), headers=headers,
                  context=server.ssl_context).json()
    assert remote["grpc"] == "" and remote["grpc_tls"] is True, remote


def cli(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAINWATCH_") or k == "TRAINWATCH_BIN"}
    environment.update(env or {})
    return subprocess.run([BIN, *map(str, args)], env=environment, capture_output=True, text=True, timeout=300)


def test_cli_speaks_https_with_its_ca(server_factory, ca, tmp_path):
    """`keys` (and every command built on tools/import_export_http) and `sync` (the SDK) against an
    https:// server: --tls-ca or TRAINWATCH_TLS_CA; without the CA the certificate is not trusted."""
    server = tls_server(server_factory, ca, "--api-key", "k-cli")
    created = cli("keys", "create", "--name", "ci-reader", "--server", server.url, "--api-key", "k-cli",
                  "--tls-ca", ca.cert)
    assert created.returncode == 0 and created.stdout.strip(), created
    from_env = cli("keys", "list", "--server", server.url, "--api-key", "k-cli", env={"TRAINWATCH_TLS_CA": str(ca.cert)})
    assert from_env.returncode == 0 and "ci-reader" in from_env.stdout, from_env
    untrusted = cli("keys", "list", "--server", server.url, "--api-key", "k-cli")
    assert untrusted.returncode != 0 and "certificate" in untrusted.stderr.lower(), untrusted

    # An offline run's spool, uploaded by `trainwatch sync` over TLS.
    report = run_child(tmp_path, server, "sdk-sync", 300, {"mode": "offline"}, flush=10)
    assert report["final"]["points_acked"] == 0, report
    synced = cli("sync", tmp_path / "spool", "--server", server.url, "--api-key", "k-cli", "--tls-ca", ca.cert)
    assert synced.returncode == 0, synced
    listing = http("GET", server.url + "/api/v1/metrics?project=sdk&run=sdk-sync",
                   headers={"Authorization": "Bearer k-cli"}, context=server.ssl_context).json()
    metrics = {m["name"]: m for m in (listing["metrics"] if isinstance(listing, dict) else listing)}
    assert metrics["tick"]["count"] == 300, metrics


def test_cli_refuses_to_send_its_key_in_clear_text_to_another_machine():
    refused = cli("keys", "list", "--server", "http://192.0.2.1:8080", "--api-key", "k-secret")
    assert refused.returncode != 0, refused
    assert "clear text" in refused.stderr and "https://" in refused.stderr, refused

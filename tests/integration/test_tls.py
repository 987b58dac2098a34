"""Native TLS on the HTTP port (HTTPS and WSS), against a real server process: curl with the test CA,
HSTS, TLS 1.2 as the floor, plaintext HTTP refused cleanly, certificate rotation (SIGHUP and file
changes) that serves new connections while open ones go on, a half-written rotation that changes
nothing, mutual TLS, and start-up errors that name the file. The gRPC side and the SDK are in
test_tls_grpc_sdk.py."""
import json
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest
import websocket

from conftest import BIN, loads
from tls_certs import TestCa
from harness import wait_until

WAIT = 30.0  # the longest a test waits for something that should happen


@pytest.fixture
def ca(tmp_path):
    return TestCa(tmp_path / "ca")


@pytest.fixture
def served(ca, tmp_path):
    """The certificate and key files the server reads (copies: rotation tests overwrite them)."""
    issued = ca.issue("server")
    cert, key = tmp_path / "served.pem", tmp_path / "served.key"
    shutil.copy(issued.cert, cert)
    shutil.copy(issued.key, key)
    return cert, key, issued.serial


def tls_server(server_factory, ca, served, *extra):
    cert, key, _ = served
    return server_factory("--tls-cert", str(cert), "--tls-key", str(key), *extra, ca_file=ca.cert)


def curl(*args):
    return subprocess.run(["curl", "--silent", "--show-error", "--max-time", "20", *args],
                          capture_output=True, text=True)


def served_serial(server):
    """The serial number of the certificate a new connection to the server is shown."""
    context = ssl.create_default_context(cafile=str(server.ca_file))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return int(s.getpeercert()["serialNumber"], 16)


def replace(path, source):
    """Writes `source`'s bytes over `path` the way deployment tools do: a new file renamed in place."""
    tmp = path.with_suffix(".new")
    shutil.copy(source, tmp)
    tmp.replace(path)


def wait_for(condition, what):
    wait_until(condition, what, timeout=WAIT)


def test_curl_with_the_test_ca_reads_and_writes_over_https(server_factory, ca, served):
    server = tls_server(server_factory, ca, served)
    line = json.dumps({"run": "tls", "step": 1, "time": 1767225600.0, "metrics": {"loss": 0.5}})
    r = curl("--cacert", str(ca.cert), "-H", "Content-Type: application/x-ndjson", "--data-binary", line,
             server.url + "/api/v1/write")
    assert r.returncode == 0, r.stderr
    assert loads(r.stdout)["points_accepted"] == 1
    r = curl("--cacert", str(ca.cert), "--include", server.url + "/api/v1/series?run=tls&metric=loss")
    assert r.returncode == 0, r.stderr
    head, _, body = r.stdout.partition("\n\n")  # text mode: CRLF read as LF
    assert "strict-transport-security: max-age=31536000" in head.lower()
    assert [p[2] for p in loads(body)["series"][0]["points"]] == [0.5]
    # Without the CA curl does not trust the certificate: it is the test CA's, over real TLS.
    r = curl(server.url + "/healthz")
    assert r.returncode == 60, (r.returncode, r.stderr)  # CURLE_PEER_FAILED_VERIFICATION


def test_plaintext_http_to_the_tls_port_gets_a_clear_400_and_the_server_goes_on(server_factory, ca, served):
    server = tls_server(server_factory, ca, served)
    r = curl("--include", "http://127.0.0.1:%d/healthz" % server.port)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("HTTP/1.1 400")
    assert "speaks HTTPS only: use https://" in r.stdout
    # A WebSocket client on ws:// is refused the same way, and gets no upgrade.
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection("ws://127.0.0.1:%d/api/v1/live" % server.port, timeout=10)
    assert refused.value.status_code == 400
    assert server.get("/healthz").status == 200
    assert server.metric_value("trainwatch_tls_handshake_failures_total") >= 2


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_tls_1_2_is_the_floor_and_1_3_is_spoken(server_factory, ca, served):
    server = tls_server(server_factory, ca, served)
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(str(ca.cert))
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    old.set_ciphers("ALL:@SECLEVEL=0")  # let the client offer TLS 1.1 at all
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError, match="ALERT_PROTOCOL_VERSION"):  # the server's alert
            old.wrap_socket(raw, server_hostname="127.0.0.1")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        context = ssl.create_default_context(cafile=str(ca.cert))
        context.minimum_version = context.maximum_version = version
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                assert s.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
                cipher = s.cipher()[0]
                assert version == ssl.TLSVersion.TLSv1_3 or cipher.startswith("ECDHE-"), cipher
    assert server.get("/healthz").status == 200


def test_sighup_rotates_the_certificate_for_new_connections_while_open_ones_go_on(server_factory, ca, served, tmp_path):
    server = tls_server(server_factory, ca, served)
    _, _, first = served
    assert served_serial(server) == first
    # An open live stream (wss) and an open keep-alive connection, both on the first certificate.
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", timeout=10,
                                     sslopt={"ca_certs": str(ca.cert)})
    ws.send(json.dumps({"subscribe": {"run": "rot"}}))
    assert loads(ws.recv()) == {"type": "subscribed"}
    assert int(ws.sock.getpeercert()["serialNumber"], 16) == first

    second = ca.issue("server-2", directory=tmp_path / "next")
    replace(served[1], second.key)
    replace(served[0], second.cert)
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: server.metric_value("trainwatch_tls_reloads_total") == 1, "the reload")
    assert served_serial(server) == second.serial
    assert "TLS certificate reloaded" in server.stderr_text()

    # The stream opened before the rotation still delivers what is written after it.
    assert server.write_ok([{"run": "rot", "step": 1, "time": 1767225600.0, "metrics": {"loss": 2.0}}])["points_accepted"] == 1
    ws.settimeout(10)
    message = loads(ws.recv())
    assert message["run"] == "rot", message
    ws.close()


def test_changed_files_are_picked_up_without_a_signal(server_factory, ca, served, tmp_path):
    server = tls_server(server_factory, ca, served)
    second = ca.issue("server-2", directory=tmp_path / "next")
    replace(served[1], second.key)
    replace(served[0], second.cert)
    wait_for(lambda: served_serial(server) == second.serial, "the new certificate (file poll)")


def test_a_half_written_rotation_keeps_the_certificate_in_use(server_factory, ca, served, tmp_path):
    server = tls_server(server_factory, ca, served)
    second = ca.issue("server-2", directory=tmp_path / "next")
    replace(served[0], second.cert)  # the certificate changes, its key not yet
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: server.metric_value("trainwatch_tls_reload_errors_total") >= 1, "the refused reload")
    assert "is not the key of the certificate" in server.stderr_text()
    assert served_serial(server) == served[2]
    assert server.get("/healthz").status == 200
    replace(served[1], second.key)
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: server.metric_value("trainwatch_tls_reloads_total") == 1, "the completed rotation")
    assert served_serial(server) == second.serial


def test_mutual_tls_refuses_clients_without_a_certificate_from_the_client_ca(server_factory, ca, served, tmp_path):
    client_ca = TestCa(tmp_path / "client-ca", name="client CA")
    good = client_ca.issue("trainer-1", client=True)
    stranger = TestCa(tmp_path / "other-ca", name="other CA").issue("intruder", client=True)
    cert, key, _ = served
    server = server_factory("--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(client_ca.cert),
                            ca_file=ca.cert, client_cert=good.cert, client_key=good.key)
    assert server.get("/healthz").status == 200  # the fixture presents trainer-1's certificate
    r = curl("--cacert", str(ca.cert), server.url + "/healthz")
    assert r.returncode != 0 and r.stdout == "", (r.returncode, r.stdout)
    r = curl("--cacert", str(ca.cert), "--cert", str(stranger.cert), "--key", str(stranger.key), server.url + "/healthz")
    assert r.returncode != 0 and r.stdout == "", (r.returncode, r.stdout)
    r = curl("--cacert", str(ca.cert), "--cert", str(good.cert), "--key", str(good.key), server.url + "/healthz")
    assert r.returncode == 0 and loads(r.stdout) == {"status": "ok"}, r.stderr
    assert server.metric_value("trainwatch_tls_handshake_failures_total") >= 2


@pytest.mark.parametrize("problem", ["missing key", "wrong key", "not pem", "client ca without tls"])
def test_bad_tls_settings_stop_the_server_at_start_with_the_file_named(ca, tmp_path, problem):
    issued = ca.issue("server")
    other = ca.issue("other", directory=tmp_path / "other")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    args, expected = {
        "missing key": (["--tls-cert", issued.cert, "--tls-key", tmp_path / "nope.key"], "nope.key"),
        "wrong key": (["--tls-cert", issued.cert, "--tls-key", other.key], "is not the key of the certificate"),
        "not pem": (["--tls-cert", garbage, "--tls-key", issued.key], "garbage.pem: not a PEM certificate"),
        "client ca without tls": (["--tls-client-ca", ca.cert], "--tls-client-ca needs --tls-cert"),
    }[problem]
    r = subprocess.run([BIN, "serve", "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0",
                        "--grpc-listen", "127.0.0.1:0", *map(str, args)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert expected in r.stderr, r.stderr

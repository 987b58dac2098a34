"""Short-lived tokens (docs/security.md, "Short-lived tokens") against a real server: where a browser
cannot send a header (the live WebSocket, an <img>), a token from POST /api/v1/tokens stands in for
its key. A token only reads, is bound to its key (refused at once when the key is revoked), sees
only the key's projects and expires; a key in a URL (?key=) is refused.
"""
import json
import os
import time

import numpy as np
import pytest
import websocket

from harness import ingest_pb
from harness import png_decode
from conftest import loads
from harness import wait_until

ADMIN = "admin-s3cret"
WAIT = 30  # seconds: generous bounds on what must come, never the measure of a test


def as_key(key, **headers):
    return dict(headers, Authorization="Bearer " + key)


def write_as(server, key, lines):
    r = server.post("/api/v1/write", lines, headers=as_key(key, **{"Content-Type": "application/x-ndjson"}))
    assert r.status == 200, r


def create_key(server, name, scope="read", projects=()):
    r = server.post("/api/v1/keys", json.dumps({"name": name, "scope": scope, "projects": list(projects)}),
                    headers=as_key(ADMIN))
    assert r.status == 200, r
    return r.json()["key"]


def token_of(server, key):
    r = server.post("/api/v1/tokens", b"", headers=as_key(key))
    assert r.status == 200, r
    answer = r.json()
    assert answer["token"].startswith("twt_") and key not in answer["token"], answer
    assert r.headers["Cache-Control"] == "no-store"
    return answer


def live(server, token):
    return websocket.create_connection(server.ws_url + "/api/v1/live?token=" + token, timeout=WAIT)


def refused_upgrade(server, query):
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(server.ws_url + "/api/v1/live?" + query, timeout=WAIT)
    return refused.value


def audit_files_text(server):
    folder = os.path.join(server.data_dir, "audit")
    return "".join(open(os.path.join(folder, f)).read() for f in os.listdir(folder))


@pytest.fixture
def keyed(server_factory):
    return server_factory("--api-key", ADMIN)


def test_a_token_opens_the_live_websocket_and_loads_an_image(keyed):
    server = keyed
    pb = ingest_pb.load()
    png = png_decode.encode_plain(np.full((3, 2, 4), 90, np.uint8))
    req = pb.WriteRequest()
    req.runs.add(project="default", run="r").images.add(name="x", step=0, data=png)
    r = server.post("/api/v1/write", req.SerializeToString(),
                    headers=as_key(ADMIN, **{"Content-Type": "application/x-protobuf"}))
    assert r.status == 200, r
    listed = server.get("/api/v1/images", {"run": "r"}, headers=as_key(ADMIN)).json()
    url = listed[0]["url"]

    dash = create_key(server, "dash")
    issued = token_of(server, dash)
    assert issued["ttl_seconds"] == 300, issued  # the default: five minutes
    # The image, as an <img src> fetches it: no header, the token in the query.
    r = server.get(url, {"token": issued["token"]})
    assert r.status == 200 and r.body == png, r
    assert server.get(url).status == 401
    # The live channel, as a browser's WebSocket opens it.
    ws = live(server, issued["token"])
    try:
        ws.send(json.dumps({"subscribe": {"project": "default", "runs": ["r"]}}))
        assert loads(ws.recv()) == {"type": "subscribed"}
        write_as(server, ADMIN, '{"run": "r", "step": 1, "metrics": {"loss": 0.5}}\n')
        msg = loads(ws.recv())
        assert msg["type"] == "points" and msg["metrics"]["loss"][0][2] == 0.5, msg
    finally:
        ws.close()
    # The admin's own key gets tokens too.
    assert server.get("/api/v1/runs", {"token": token_of(server, ADMIN)["token"]}).status == 200

    # Tokens end with the process: its secret is never stored.
    server.restart()
    r = server.get(url, {"token": issued["token"]})
    assert r.status == 401 and "not issued by this server process" in r.json()["error"], r


def test_a_token_only_reads(keyed):
    server = keyed
    issued = token_of(server, ADMIN)  # even an admin's token reads only
    token = {"token": issued["token"]}
    line = '{"run": "forged", "step": 0, "metrics": {"loss": 1}}\n'
    for path, body, ctype in (("/api/v1/write", line, "application/x-ndjson"),
                              ("/api/v1/silences", '{"duration": "52w"}', "application/json"),
                              ("/api/v1/keys", '{"name": "minted", "scope": "admin"}', "application/json"),
                              ("/api/v1/tokens", "", "application/json")):  # no token from a token
        r = server.post(path, body, params=token, headers={"Content-Type": ctype})
        assert r.status == 401 and "good only for GET, HEAD and WebSocket" in r.json()["error"], (path, r)
    # Reads of admin-only data need more than read.
    for path in ("/api/v1/keys", "/api/v1/audit"):
        r = server.get(path, token)
        assert r.status == 403 and "scope read" in r.json()["error"], (path, r)
    # A token is not a key: in the Authorization header it is refused.
    r = server.get("/api/v1/runs", headers=as_key(issued["token"]))
    assert r.status == 401, r
    # Nothing changed.
    assert server.get("/api/v1/runs", headers=as_key(ADMIN)).json()["runs"] == []
    assert server.get("/api/v1/silences", headers=as_key(ADMIN)).json()["silences"] == []
    assert [k["name"] for k in server.get("/api/v1/keys", headers=as_key(ADMIN)).json()["keys"]] == []


def test_a_key_in_a_url_is_refused(keyed):
    server = keyed
    dash = create_key(server, "dash")
    for key in (ADMIN, dash):
        r = server.get("/api/v1/runs", {"key": key})
        assert r.status == 401, r
        assert "not accepted in a URL" in r.json()["error"] and "POST /api/v1/tokens" in r.json()["error"], r
        assert refused_upgrade(server, "key=" + key).status_code == 401
    # The audit log's `key` filter is a name, beside a key in the header: still fine.
    assert server.get("/api/v1/audit", {"key": "api-key"}, headers=as_key(ADMIN)).status == 200
    # The refusals are audited, naming no key.
    entries = server.get("/api/v1/audit", {"failures": 1}, headers=as_key(ADMIN)).json()["entries"]
    assert [(e["action"], e["outcome"]) for e in entries] == [("GET /api/v1/live", 401), ("GET /api/v1/runs", 401)] * 2
    assert "not accepted in a URL" in entries[0]["detail"], entries[0]
    text = audit_files_text(server)
    assert ADMIN not in text and dash not in text


def test_an_expired_token_is_refused(server_factory):
    server = server_factory("--api-key", ADMIN, "--token-ttl", "1s")
    issued = token_of(server, ADMIN)
    assert issued["ttl_seconds"] == 1, issued
    # Until it expires the token reads; then it is refused, saying so. The server's clock decides:
    # the loop waits for the refusal, whose message, and the time after it, say expiry was why.
    def refused():
        answer = server.get("/api/v1/runs", {"token": issued["token"]})
        return answer if answer.status != 200 else None
    r = wait_until(refused, "the token to expire", timeout=WAIT)
    assert r.status == 401 and "token expired" in r.json()["error"], r
    assert time.time() >= issued["expires_at"]
    assert refused_upgrade(server, "token=" + issued["token"]).status_code == 401


def test_a_revoked_keys_token_is_refused_at_once(keyed):
    server = keyed
    dash = create_key(server, "dash")
    token = token_of(server, dash)["token"]
    assert server.get("/api/v1/runs", {"token": token}).status == 200
    ws = live(server, token)
    ws.close()
    r = server.post("/api/v1/keys/revoke", '{"name": "dash"}', headers=as_key(ADMIN))
    assert r.status == 200, r
    r = server.get("/api/v1/runs", {"token": token})
    assert r.status == 401 and "its key was revoked" in r.json()["error"], r
    assert refused_upgrade(server, "token=" + token).status_code == 401
    # A key made again under the same name is another key: the old token stays refused.
    again = create_key(server, "dash")
    assert server.get("/api/v1/runs", {"token": token}).status == 401
    assert server.get("/api/v1/runs", {"token": token_of(server, again)["token"]}).status == 200
    # Refused tokens are audited like refused keys, under no name and without the token.
    entries = server.get("/api/v1/audit", {"failures": 1}, headers=as_key(ADMIN)).json()["entries"]
    assert [(e["key"], e["action"], e["outcome"]) for e in entries][:3] == [
        ("", "GET /api/v1/runs", 401), ("", "GET /api/v1/live", 401), ("", "GET /api/v1/runs", 401)], entries
    assert "revoked" in entries[-1]["detail"], entries
    assert token not in audit_files_text(server)
    # Issuing tokens is audited, under the key's name.
    issued = [e for e in server.get("/api/v1/audit", {"action": "POST /api/v1/tokens"},
                                    headers=as_key(ADMIN)).json()["entries"]]
    assert [e["key"] for e in issued] == ["dash", "dash"], issued


def test_a_project_bound_keys_token_sees_only_its_projects(keyed):
    server = keyed
    for project in ("vision", "nlp"):
        write_as(server, ADMIN, '{"project": "%s", "run": "r", "step": 0, "metrics": {"loss": 1}}\n' % project)
    vision = create_key(server, "vision-ci", scope="write", projects=["vision"])
    token = token_of(server, vision)["token"]  # no project= needed to get one
    runs = server.get("/api/v1/runs", {"project": "vision", "token": token})
    assert runs.status == 200 and [r["project"] for r in runs.json()["runs"]] == ["vision"], runs
    for params in ({"project": "nlp"}, {}):
        r = server.get("/api/v1/runs", dict(params, token=token))
        assert r.status == 403 and "does not see project" in r.json()["error"], (params, r)
    ws = live(server, token)
    try:
        ws.send(json.dumps({"subscribe": {"project": "nlp"}}))
        assert "does not see project 'nlp'" in loads(ws.recv())["error"]
        ws.send(json.dumps({"subscribe": {"project": "vision"}}))
        assert loads(ws.recv()) == {"type": "subscribed"}
    finally:
        ws.close()
    # Its token reads only, though the key writes.
    r = server.post("/api/v1/write", '{"project": "vision", "run": "r", "step": 1, "metrics": {"loss": 1}}\n',
                    params={"token": token}, headers={"Content-Type": "application/x-ndjson"})
    assert r.status == 401, r


def test_a_token_of_a_server_without_keys_ends_when_it_gets_one(server):
    issued = token_of(server, "anything")  # no keys: every request is allowed, a token too
    assert server.get("/api/v1/runs", {"token": issued["token"]}).status == 200
    r = server.post("/api/v1/keys", '{"name": "first", "scope": "admin"}')
    assert r.status == 200, r
    first = r.json()["key"]
    r = server.get("/api/v1/runs", {"token": issued["token"]})
    assert r.status == 401 and "had no keys" in r.json()["error"], r
    assert server.get("/api/v1/runs", {"token": token_of(server, first)["token"]}).status == 200


def test_a_project_bound_key_reads_a_blob_only_through_a_run_it_sees(keyed):
    """Blobs are shared by content across projects: knowing a hash is not enough."""
    server = keyed
    pb = ingest_pb.load()
    secret = png_decode.encode_plain(np.full((2, 2, 3), 7, np.uint8))
    shared = png_decode.encode_plain(np.full((2, 2, 3), 200, np.uint8))
    req = pb.WriteRequest()
    req.runs.add(project="nlp", run="n").images.add(name="x", step=0, data=secret)
    req.runs.add(project="nlp", run="n").images.add(name="y", step=0, data=shared)
    req.runs.add(project="vision", run="v").images.add(name="y", step=0, data=shared)
    r = server.post("/api/v1/write", req.SerializeToString(),
                    headers=as_key(ADMIN, **{"Content-Type": "application/x-protobuf"}))
    assert r.status == 200, r
    nlp = {e["name"]: e["url"] for e in server.get("/api/v1/images", {"project": "nlp", "run": "n"},
                                                    headers=as_key(ADMIN)).json()}
    vision_key = create_key(server, "vision-dash", projects=["vision"])
    token = token_of(server, vision_key)["token"]
    for auth in ({"headers": as_key(vision_key)}, {"token": token}):
        params = {"token": auth["token"]} if "token" in auth else {}
        headers = auth.get("headers")
        # Another project's image, by its hash: not through a run of that project, nor of its own.
        r = server.get(nlp["x"], dict(params, project="nlp", run="n"), headers=headers)
        assert r.status == 403, r
        r = server.get(nlp["x"], dict(params, project="vision", run="v"), headers=headers)
        assert r.status == 404 and "has this content" in r.json()["error"], r
        r = server.get(nlp["x"], dict(params, project="vision"), headers=headers)
        assert r.status == 400 and "run=" in r.json()["error"], r
        # The same content its own run holds: yes.
        r = server.get(nlp["y"], dict(params, project="vision", run="v"), headers=headers)
        assert r.status == 200 and r.body == shared, r
    # A key that sees every project reads any blob by its hash, as before.
    assert server.get(nlp["x"], headers=as_key(ADMIN)).body == secret


def test_revoking_a_key_ends_its_open_live_connections(keyed):
    server = keyed
    dash = create_key(server, "dash")
    other = create_key(server, "other")
    by_token = live(server, token_of(server, dash)["token"])
    by_header = websocket.create_connection(server.ws_url + "/api/v1/live", timeout=WAIT,
                                            header=["Authorization: Bearer " + dash])
    kept = live(server, token_of(server, other)["token"])
    for ws in (by_token, by_header, kept):
        ws.send(json.dumps({"subscribe": {"project": "default"}}))
        assert loads(ws.recv()) == {"type": "subscribed"}
    r = server.post("/api/v1/keys/revoke", json.dumps({"name": "dash"}), headers=as_key(ADMIN))
    assert r.status == 200, r
    for ws in (by_token, by_header):
        with pytest.raises(websocket.WebSocketConnectionClosedException):
            ws.recv()  # the server closed it: no message, the connection ends
    # The other key's connection goes on: it still gets the points written after the revocation.
    write_as(server, ADMIN, '{"run": "r", "step": 1, "metrics": {"loss": 0.5}}\n')
    assert loads(kept.recv())["type"] == "points"
    kept.close()

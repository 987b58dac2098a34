"""gRPC ingest streams in the audit log, against a real server: a stream's opening is durable before
its first acknowledgement (kill -9 keeps it), its end carries its counts, and refused streams name
the key and the reason — never the key itself."""
import os
import queue

import grpc  # python3-grpcio (install-deps.sh)
import pytest

from harness import ingest_pb

WRITE = "/trainwatch.v1.Ingest/Write"
T0 = 1767225600.0


def as_key(key):
    return {"Authorization": "Bearer " + key}


def create_key(server, admin, name, scope):
    r = server.post("/api/v1/keys", '{"name": "%s", "scope": "%s"}' % (name, scope), headers=as_key(admin))
    assert r.status == 200, r
    return r.json()["key"]


def stream(server, pb, key):
    """Opens Ingest/Write with `key`; returns (send, close)."""
    channel = grpc.insecure_channel("127.0.0.1:%d" % server.grpc_port)
    requests = queue.Queue()
    call = channel.stream_stream(WRITE, request_serializer=pb.WriteRequest.SerializeToString,
                                 response_deserializer=pb.WriteAck.FromString)
    acks = call(iter(requests.get, None), metadata=[("authorization", "Bearer " + key)], timeout=300)

    def send(request):
        requests.put(request)
        return next(acks)

    def close():
        requests.put(None)
        for _ in acks:
            pass
        channel.close()

    return send, close


def batch(pb, sequence, steps):
    request = pb.WriteRequest(writer_id="audited-writer", sequence=sequence)
    b = request.runs.add(project="p", run="r")
    b.steps.extend(steps)
    b.times.extend(T0 + s for s in steps)
    b.metrics.add(name="loss", rows=list(range(len(steps))), values=[float(s) for s in steps])
    return request


def grpc_entries(server, admin):
    entries = server.get("/api/v1/audit", {"action": "gRPC"}, headers=as_key(admin)).json()["entries"]
    return list(reversed(entries))  # oldest first


def test_grpc_streams_are_audited_and_the_opening_survives_kill9(server_factory):
    pb = ingest_pb.load()
    admin = "admin-s3cret"
    server = server_factory("--api-key", admin)
    writer = create_key(server, admin, "trainer", "write")
    reader = create_key(server, admin, "dash", "read")

    send, close = stream(server, pb, writer)
    assert send(batch(pb, 1, [0, 1, 2])).points_accepted == 3
    assert send(batch(pb, 2, [3, 4])).points_accepted == 2
    close()
    with pytest.raises(grpc.RpcError) as refused:
        stream(server, pb, reader)[0](batch(pb, 3, [5]))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as refused:
        stream(server, pb, "tw_guess_guess")[0](batch(pb, 3, [5]))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

    # A stream that is acknowledged and then loses its server: its opening is already in the log.
    send, _ = stream(server, pb, writer)
    assert send(batch(pb, 3, [5])).points_accepted == 1
    server.kill9()
    server.start()

    seen = [(e["key"], e["target"], e["outcome"]) for e in grpc_entries(server, admin)]
    assert seen == [("trainer", "stream opened", 200),
                    ("trainer", "stream closed: 2 batches, 5 points accepted, 0 rejected", 200),
                    ("dash", "stream opened", 403),
                    ("", "stream opened", 401),
                    ("trainer", "stream opened", 200)], seen
    entries = grpc_entries(server, admin)
    assert all(e["remote"] == "127.0.0.1" and e["action"] == "gRPC Ingest/Write" for e in entries), entries
    assert "scope read" in entries[2]["detail"], entries[2]
    raw = "".join(open(os.path.join(server.data_dir, "audit", f)).read()
                  for f in os.listdir(os.path.join(server.data_dir, "audit")))
    assert writer not in raw and reader not in raw and "tw_guess_guess" not in raw

"""WebSocket /api/v1/live: subscriptions receive committed points, filtered by project, run and metric."""
import itertools
import json
import time

import pytest
import websocket

from conftest import loads
from harness import wait_until

SERVER_ARGS = ()
WAIT = 5.0  # seconds to wait for a message that should come
QUIET = 1.0  # seconds of silence that show a message is not coming


def connect(server):
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", timeout=WAIT)
    return ws


def subscribe(server, **spec):
    ws = connect(server)
    ws.send(json.dumps({"subscribe": spec}))
    assert loads(ws.recv()) == {"type": "subscribed"}
    return ws


def recv_json(ws, timeout=WAIT):
    ws.settimeout(timeout)
    return loads(ws.recv())


def assert_silent(ws, seconds=QUIET):
    ws.settimeout(seconds)
    with pytest.raises(websocket.WebSocketTimeoutException):
        message = ws.recv()
        pytest.fail("expected no message, got %r" % message)


def test_subscriber_receives_points_written_after_subscribing(module_server):
    ws = subscribe(module_server, project="live", runs=["r1"], metrics=["loss"])
    try:
        module_server.write_ok([
            {"project": "live", "run": "r1", "step": 10, "time": 1767225600.5, "metrics": {"loss": 0.75, "acc": 0.5}},
            {"project": "live", "run": "r1", "step": 11, "time": 1767225601.5, "metrics": {"loss": float("nan")}},
        ])
        msg = recv_json(ws)
        assert msg["type"] == "points" and msg["project"] == "live" and msg["run"] == "r1", msg
        assert list(msg["metrics"]) == ["loss"], msg  # acc is filtered out
        loss = msg["metrics"]["loss"]
        assert loss[0] == [10, 1767225600.5, 0.75], msg
        assert loss[1][:2] == [11, 1767225601.5] and loss[1][2] == "NaN", msg
        # The NaN is an incident: its alert follows on the same channel.
        alert = recv_json(ws)
        assert alert["type"] == "alert", alert
        assert (alert["alert"]["kind"], alert["alert"]["run"], alert["alert"]["step"]) == ("nan", "r1", 11), alert
        assert alert["alert"]["status"] == "firing", alert
        assert_silent(ws)
    finally:
        ws.close()


def test_filters_by_run_project_and_metric(module_server):
    match = subscribe(module_server, project="live", runs=["r2"])
    other_run = subscribe(module_server, project="live", runs=["somebody-else"])
    other_project = subscribe(module_server, project="elsewhere")
    other_metric = subscribe(module_server, project="live", runs=["r2"], metrics=["not-written"])
    everything = subscribe(module_server)  # no project: every project
    try:
        module_server.write_ok([{"project": "live", "run": "r2", "step": 1, "time": 1767225600,
                                 "metrics": {"loss": 2.5}}])
        msg = recv_json(match)
        assert msg["run"] == "r2" and msg["metrics"] == {"loss": [[1, 1767225600, 2.5]]}, msg
        msg = recv_json(everything)
        assert msg["run"] == "r2" and msg["metrics"] == {"loss": [[1, 1767225600, 2.5]]}, msg
        # The matching subscriber has its message: the others have had every chance to get theirs.
        for ws in (other_run, other_project, other_metric):
            assert_silent(ws, 0.5)
    finally:
        for ws in (match, other_run, other_project, other_metric, everything):
            ws.close()


def test_rejected_lines_are_not_published(module_server):
    ws = subscribe(module_server, project="live", runs=["r3"])
    try:
        r = module_server.write([
            {"project": "live", "run": "r3", "step": 1, "time": 1767225600, "metrics": {"loss": "bad"}},
            {"project": "live", "run": "r3", "step": 2, "time": 1767225601, "metrics": {"loss": 1.0}},
        ])
        assert r.status == 400
        msg = recv_json(ws)
        assert msg["metrics"] == {"loss": [[2, 1767225601, 1.0]]}, msg
        assert_silent(ws)
    finally:
        ws.close()


_fresh_steps = itertools.count(2)


@pytest.mark.parametrize("message", [
    "not json",
    "[]",
    '{"unsubscribe": {}}',
    '{"subscribe": "everything"}',
    '{"subscribe": {"runs": "r1"}}',
    '{"subscribe": {"project": 5}}',
    '{"subscribe": {"metrics": [1, 2]}}',
])
def test_bad_subscribe_gets_an_error_and_the_connection_stays_usable(module_server, message):
    ws = connect(module_server)
    try:
        ws.send(message)
        reply = recv_json(ws)
        assert reply["type"] == "error" and reply["error"], reply
        # A bad message is not a subscription: writes are not delivered ...
        module_server.write_ok([{"project": "live", "run": "r4", "step": 1, "metrics": {"loss": 1}}])
        assert_silent(ws, 0.5)
        # ... and a good one afterwards works.
        ws.send(json.dumps({"subscribe": {"project": "live", "runs": ["r4"]}}))
        assert recv_json(ws) == {"type": "subscribed"}
        # A fresh step for each case: an identical rewrite changes nothing and is not pushed.
        step = next(_fresh_steps)
        module_server.write_ok([{"project": "live", "run": "r4", "step": step, "time": 1767225600,
                                 "metrics": {"loss": 2}}])
        assert recv_json(ws)["metrics"] == {"loss": [[step, 1767225600, 2]]}
    finally:
        ws.close()


def test_resubscribe_replaces_the_filter(module_server):
    ws = subscribe(module_server, project="live", runs=["r5"])
    try:
        ws.send(json.dumps({"subscribe": {"project": "live", "runs": ["r6"]}}))
        assert recv_json(ws) == {"type": "subscribed"}
        module_server.write_ok([{"project": "live", "run": "r5", "step": 1, "metrics": {"loss": 1}}])
        module_server.write_ok([{"project": "live", "run": "r6", "step": 1, "time": 1767225600,
                                 "metrics": {"loss": 6}}])
        msg = recv_json(ws)
        assert msg["run"] == "r6", msg
        assert_silent(ws, 0.5)
    finally:
        ws.close()


def test_closed_subscribers_are_forgotten(module_server):
    before = module_server.metric_value("trainwatch_live_subscribers")
    sockets = [subscribe(module_server, project="live") for _ in range(3)]
    assert module_server.metric_value("trainwatch_live_subscribers") == before + 3
    for ws in sockets:
        ws.close()
    wait_until(lambda: module_server.metric_value("trainwatch_live_subscribers") == before,
               "the closed subscribers to be forgotten", timeout=WAIT)
    # Writes after the subscribers left still succeed.
    module_server.write_ok([{"project": "live", "run": "r7", "step": 1, "metrics": {"loss": 1}}])


def test_identical_rewrite_is_not_pushed_again(module_server):
    ws = subscribe(module_server, project="live", runs=["r9"])
    try:
        line = {"project": "live", "run": "r9", "step": 1, "time": 1767225600, "metrics": {"loss": 9}}
        module_server.write_ok([line])
        assert recv_json(ws)["metrics"] == {"loss": [[1, 1767225600, 9]]}
        module_server.write_ok([line])  # a retry: nothing changed
        assert_silent(ws, 0.5)
    finally:
        ws.close()

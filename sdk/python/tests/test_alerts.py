"""Alerts reach the training job (run.alerts, run.on_alert, run.should_stop, watch(stop_on=...),
`action: stop` in the alerting file), against a real server and real PyTorch training."""
import json
import threading

import torch

import trainwatch as tw
from harness import wait_until

FAST = dict(system_metrics=False, flush_timeout_seconds=15, batch_max_delay_seconds=0.02)
STOP_KINDS = ["nan", "divergence", "grad_explosion"]
BLOW_UP_STEP = 300
MAX_STEPS = 200_000  # a budget the job never reaches: it stops on the alert long before


def texts(server, run_id, project="p"):
    return server.get_json("/api/v1/texts", {"project": project, "run": run_id})


def test_blown_up_learning_rate_stops_the_job_with_a_checkpoint(server, tmp_path):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    target = torch.randn(8, 1)
    run = tw.init(project="p", id="blowup", server=server.url, **FAST)
    arrivals = []  # (run.step when the alert arrived, thread name, alert)
    run.on_alert(lambda a: arrivals.append((run.step, threading.current_thread().name, a)))
    tw.watch(model, stop_on=STOP_KINDS, hist_every=0)
    checkpoint = tmp_path / "final.pt"
    step = 0
    for step in range(MAX_STEPS):
        if step == BLOW_UP_STEP:
            for group in opt.param_groups:
                group["lr"] = 100.0
        x = torch.randn(32, 8)
        loss = torch.nn.functional.mse_loss(model(x), x @ target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.log({"loss": loss.item(), "lr": opt.param_groups[0]["lr"]})
        if run.should_stop():
            torch.save({"step": step, "model": model.state_dict()}, checkpoint)
            run.record_stop(checkpoint=checkpoint)
            break
    run.finish()

    reason = run.stop_reason
    assert reason is not None and reason["kind"] in STOP_KINDS, arrivals
    assert reason["step"] >= BLOW_UP_STEP  # raised on the blow-up, not before it
    arrived_at = next(s for s, _, a in arrivals if a["id"] == reason["id"])
    assert step <= arrived_at + 1  # stopped at the first check after the alert arrived
    # never the training thread, nor the thread reading the feed
    assert all(name == "trainwatch-alert-callbacks" for _, name, _ in arrivals)
    assert reason["id"] in [a["id"] for a in run.alerts]
    saved = torch.load(checkpoint)
    assert saved["step"] == step and set(saved["model"]) == set(model.state_dict())

    info = server.run_info("p", "blowup")
    stopped = info["config"]["stopped_by_alert"]
    assert stopped["step"] == step and stopped["alert_id"] == reason["id"]
    assert stopped["alert_kind"] == reason["kind"] and stopped["checkpoint"] == str(checkpoint)
    assert "stopped_by_alert" in info["tags"] and info["status"] == "finished"
    [note] = [t for t in texts(server, "blowup") if t["name"] == "trainwatch/stopped"]
    assert note["step"] == step and ("because of alert %d" % reason["id"]) in note["value"]
    print("blow-up at step %d, %s alert at step %d arrived at step %d, stopped at step %d"
          % (BLOW_UP_STEP, reason["kind"], reason["step"], arrived_at, step))


def wait_for_alert(run, name):
    return wait_until(lambda: next((a for a in run.alerts if a["name"] == name and a["fired_at"]),
                                   None), "alert %s at the job" % name)


def test_action_stop_in_the_alerting_file_stops_without_stop_on(server_factory, tmp_path):
    rules = tmp_path / "alerts.yml"
    rules.write_text("""
groups:
  - name: job
    rules:
      - {alert: LossHigh, expr: loss > 2, action: notify_only}
      - {alert: LossHuge, expr: loss > 100, action: stop}
""")
    server = server_factory("--alerting", str(rules))
    run = tw.init(project="p", id="actions", server=server.url, **FAST)
    assert not run.should_stop()  # starts the feed
    wait_until(lambda: run._feed.connected.is_set(), "the alert feed to subscribe")
    run.log({"loss": 1.0})
    run.log({"loss": 5.0})
    high = wait_for_alert(run, "LossHigh")
    assert high["labels"]["action"] == "notify_only"
    assert not run.should_stop()  # notify_only: the job carries on
    run.log({"loss": 500.0})
    huge = wait_for_alert(run, "LossHuge")
    assert huge["labels"]["action"] == "stop" and huge["kind"] == "rule"
    assert run.should_stop() and run.stop_reason["id"] == huge["id"]
    run.finish()
    stopped = server.run_info("p", "actions")["config"]["stopped_by_alert"]
    assert stopped == {"step": 2, "alert_id": huge["id"], "alert_kind": "rule",
                       "alert_name": "LossHuge", "alert_step": 2, "message": huge["message"]}


def test_alerts_raised_before_the_feed_started_arrive(server):
    run = tw.init(project="p", id="early", server=server.url, **FAST)
    for step in range(5):
        run.log({"loss": 1.0}, step=step)
    run.log({"loss": float("nan")}, step=5)
    run.flush()
    wait_until(lambda: server.get_json("/api/v1/alerts", {"project": "p", "run": "early"})["alerts"],
               "the nan alert on the server")
    got = []
    run.on_alert(got.append)  # first use of the alerts API: reads what fired already
    wait_until(lambda: got, "the alert at the job")
    assert [a["kind"] for a in got] == ["nan"] and got[0]["step"] == 5
    run.stop_on(["nan"])  # given after the alert arrived: still counts
    assert run.should_stop()
    run.finish()


def test_only_the_runs_own_alerts_and_no_points_arrive(server):
    other = tw.init(project="p", id="other", server=server.url, **FAST)
    run = tw.init(project="p", id="mine", server=server.url, **FAST)
    run.should_stop()
    wait_until(lambda: run._feed.connected.is_set(), "the alert feed to subscribe")
    other.log({"loss": float("nan")})
    other.flush()
    wait_until(lambda: server.get_json("/api/v1/alerts", {"project": "p", "run": "other"})["alerts"],
               "the other run's alert")
    run.log({"loss": float("nan")})
    mine = wait_for_alert(run, "nan")
    assert [a["run"] for a in run.alerts] == ["mine"] and mine["run"] == "mine"
    assert run._feed.received["points"] == 0 and run._feed.received["alert"] >= 1
    other.finish()
    run.finish()


def test_a_failing_callback_warns_and_the_feed_goes_on(server, recwarn):
    run = tw.init(project="p", id="callbacks", server=server.url, **FAST)
    seen = []

    def broken(alert):
        raise RuntimeError("boom")
    run.on_alert(broken)
    run.on_alert(seen.append)
    run.log({"loss": float("nan")})
    wait_until(lambda: seen, "the second callback")
    assert any("on_alert callback raised RuntimeError: boom" in str(w.message) for w in recwarn.list)
    run.finish()


def test_offline_runs_receive_nothing(tmp_path):
    run = tw.init(project="p", mode="offline", spool_dir=str(tmp_path / "spool"), system_metrics=False)
    assert not run.should_stop() and run.alerts == [] and run.stop_reason is None
    run.finish()


def test_finish_records_a_stop_the_loop_saw(server):
    run = tw.init(project="p", id="auto-record", server=server.url, **FAST)
    run.stop_on("nan")
    run.log({"loss": 1.0})
    run.log({"loss": float("nan")})
    wait_until(run.should_stop, "should_stop()")
    run.log({"loss": 1.0})  # one more step, then the loop stops without calling record_stop()
    run.finish()
    stopped = server.run_info("p", "auto-record")["config"]["stopped_by_alert"]
    assert stopped["step"] == 2 and stopped["alert_kind"] == "nan" and "checkpoint" not in stopped
    assert json.dumps(stopped)  # plain JSON


def _test_ca(directory):
    """tests/integration/tls_certs.py's throw-away CA (loaded by path: it is another suite's helper)."""
    import importlib.util
    import os
    from conftest import REPO
    path = os.path.join(REPO, "tests", "integration", "tls_certs.py")
    spec = importlib.util.spec_from_file_location("tls_certs_for_alerts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TestCa(directory)


def test_alerts_arrive_over_tls_with_the_api_key(server_factory, tmp_path):
    ca = _test_ca(tmp_path / "ca")
    cert = ca.issue("server", hosts=["127.0.0.1", "localhost"])
    server = server_factory("--tls-cert", str(cert.cert), "--tls-key", str(cert.key),
                            "--api-key", "s3cret", ca_file=ca.cert)
    assert server.url.startswith("https://")
    run = tw.init(project="p", id="tls", server=server.url, api_key="s3cret",
                  tls_ca_file=str(ca.cert), **FAST)
    run.stop_on("nan")
    run.log({"loss": float("nan")})
    wait_until(run.should_stop, "the nan alert over wss://")
    run.finish()

    wrong = tw.init(project="p", id="tls-wrong-key", server=server.url, api_key="wrong",
                    tls_ca_file=str(ca.cert), **FAST)
    wrong.should_stop()
    wait_until(lambda: wrong._feed.last_error, "the refused upgrade")
    assert "401" in wrong._feed.last_error and not wrong._feed.connected.is_set()
    wrong.finish()


def test_the_key_never_goes_in_clear_text_to_another_machine(recwarn):
    run = tw.init(project="p", server="http://10.255.255.1:9", api_key="s3cret", **FAST)
    run.should_stop()
    assert "refusing to send the API key in clear text" in run._feed.last_error
    assert not run._feed._thread.is_alive()  # never connected
    run.finish()


def test_the_feed_reconnects_after_a_server_restart(server):
    run = tw.init(project="p", id="restart", server=server.url, **FAST)
    run.stop_on("nan")
    wait_until(lambda: run._alert_feed().connected.is_set(), "the alert feed to subscribe")
    server.restart()
    run.log({"loss": float("nan")})  # raised after the restart: reaches the job on a new connection
    wait_until(run.should_stop, "the nan alert after the restart")
    run.finish()

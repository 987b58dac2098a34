"""A real Prometheus evaluates an alert rule over trainwatch's training metrics, read through remote
read (/prometheus/api/v1/read), and its alert reaches a real Alertmanager, which posts it to a
webhook: the seed's `HighLoss` rule (`training_metrics{metric_name="loss"} > 0.5`), with a short
`for` so that the test does not wait ten minutes. Debian's prometheus and prometheus-alertmanager,
on ports they pick themselves."""
import http.server
import json
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import http as request

PROMETHEUS, ALERTMANAGER = "/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager"


def start(cmd, ready):
    """Starts `cmd` and reads its log until `ready` (a regex with the port as group 1) matches."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    port, log = None, []
    for line in proc.stdout:
        log.append(line)
        m = re.search(ready, line)
        if m:
            port = int(m.group(1))
            break
    assert port, "%s exited:\n%s" % (cmd[0], "".join(log))
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # keep draining its log
    return proc, port


class Webhook(http.server.BaseHTTPRequestHandler):
    alerts = []
    arrived = threading.Condition()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with Webhook.arrived:
            Webhook.alerts.extend(body["alerts"])
            Webhook.arrived.notify_all()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_high_loss_rule_fires_through_remote_read_to_alertmanager(server, tmp_path):
    for tool in (PROMETHEUS, ALERTMANAGER):
        if not os.access(tool, os.X_OK):
            pytest.fail("%s is missing: scripts/install-deps.sh installs it" % tool)
    now = time.time()
    # r1's loss is high, r2's is not; both recent enough for an instant selector's lookback.
    server.write_ok([{"project": "default", "run": run, "step": 1, "time": now, "metrics": {"loss": loss}}
                     for run, loss in (("r1", 0.9), ("r2", 0.1))])

    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Webhook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    (tmp_path / "am.yml").write_text(
        "route:\n  receiver: hook\n  group_wait: 0s\n  group_interval: 1s\n"
        "receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:%d/\n" % hook.server_port)
    am, am_port = start([ALERTMANAGER, "--config.file=%s" % (tmp_path / "am.yml"), "--storage.path=%s" % (tmp_path / "am"),
                         "--web.listen-address=127.0.0.1:0", "--cluster.listen-address="],
                        r'msg="Listening on" address=127\.0\.0\.1:(\d+)')
    (tmp_path / "rules.yml").write_text(
        "groups:\n  - name: training\n    rules:\n      - alert: HighLoss\n"
        "        expr: training_metrics{metric_name=\"loss\"} > 0.5\n        for: 3s\n"
        "        labels:\n          severity: warning\n")
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  evaluation_interval: 1s\n  scrape_interval: 1h\n"
        "rule_files:\n  - %s\n"
        "remote_read:\n  - url: %s/prometheus/api/v1/read\n    read_recent: true\n"
        "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:%d']\n"
        % (tmp_path / "rules.yml", server.url, am_port))
    prom, _ = start([PROMETHEUS, "--config.file=%s" % (tmp_path / "prometheus.yml"),
                     "--storage.tsdb.path=%s" % (tmp_path / "prom"), "--web.listen-address=127.0.0.1:0",
                     "--rules.alert.resend-delay=1s"],
                    r'msg="Listening on" address=127\.0\.0\.1:(\d+)')
    try:
        with Webhook.arrived:
            # Prometheus evaluates every second; the alert is pending for 3 s, then fires.
            fired = Webhook.arrived.wait_for(lambda: any(a["labels"].get("alertname") == "HighLoss"
                                                         for a in Webhook.alerts), timeout=120)
        assert fired, "no HighLoss alert reached the webhook"
        alert = next(a for a in Webhook.alerts if a["labels"]["alertname"] == "HighLoss")
        assert alert["status"] == "firing"
        assert alert["labels"]["run"] == "r1" and alert["labels"]["metric_name"] == "loss"
        assert alert["labels"]["severity"] == "warning"
        assert all(a["labels"]["run"] == "r1" for a in Webhook.alerts), "r2's loss is below the threshold"
    finally:
        prom.terminate()
        am.terminate()
        prom.wait(timeout=30)
        am.wait(timeout=30)
        hook.shutdown()


def test_remote_read_refuses_what_is_not_a_read_request(server):
    r = request("POST", server.url + "/prometheus/api/v1/read", b"not snappy",
                headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
    assert r.status == 400 and b"snappy" in r.body

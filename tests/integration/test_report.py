"""Training reports (docs/reports.md): GET /api/v1/report and `trainwatch report`, against a real server.

A demo-like run (losses, accuracy, learning rate, phase timers, system and GPU samples with an idle
stretch), a run whose loss turns NaN (an alert), and a run with another learning rate to compare with.
The HTML must hold every section with the exact figures of the data written; the PDF (Debian's
Chromium) must have a page per section (pdftotext); bad parameters are refused naming them.
"""
import html as htmllib
import json
import math
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN
from harness import wait_until

PROJECT = "demo"
T0 = 1767225600.0
STEPS = 600
CHROMIUM = os.environ.get("TRAINWATCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = os.access(CHROMIUM, os.X_OK)
HAVE_PDFTOTEXT = shutil.which("pdftotext") is not None and shutil.which("pdfinfo") is not None


def loss_at(step, lr_scale=1.0):
    return round(2.0 * math.exp(-step / (150.0 * lr_scale)) + 0.05 * math.sin(step * 0.7) + 0.1, 6)


def demo_run(run, lr, nan_at=None, status="finished"):
    """Records of one demo-like run; returns (lines, values of loss by step)."""
    # metadata rides on step lines: a line without a time would be stamped with the server's
    meta = {"name": run, "group": "sweep", "host": "box-1", "tags": ["report-test"],
            "config": {"optim": {"lr": lr, "momentum": 0.9}, "model": {"hidden": 64, "layers": 3}}}
    lines = []
    losses = {}
    for step in range(STEPS):
        t = T0 + 0.1 * step
        loss = loss_at(step, 1.0 if lr < 0.1 else 2.0)
        if nan_at is not None and step >= nan_at:
            loss = float("nan")
        losses[step] = loss
        metrics = {"loss": loss, "lr": lr,
                   "time/data": 0.01, "time/forward": 0.03, "time/backward": 0.05, "time/optimizer": 0.01,
                   "time/step": 0.1}
        if step % 50 == 49:
            metrics["val_loss"] = round(loss_at(step) + 0.05, 6)
            metrics["val_accuracy"] = round(min(0.99, 0.5 + step / 1000.0), 6)
        line = {"project": PROJECT, "run": run, "step": step, "time": t, "metrics": metrics}
        if step == 0:
            line.update(meta)
        if step == STEPS - 1:
            line["status"] = status
        lines.append(line)
        if step % 10 == 0:
            sample = step // 10
            gpu = 0.0 if sample < 12 else 85.0 + (sample % 5)  # idle for the first 12 samples
            lines.append({"project": PROJECT, "run": run, "step": sample, "time": t, "metrics": {
                "system/cpu_percent": 40.0 + sample % 7, "system/memory_used_bytes": 2e9 + sample * 1e6,
                "system/gpu/0/utilization_percent": gpu,
                "system/gpu/0/memory_used_bytes": 4e9 + (3e9 if sample == 40 else 0)}})
    return lines, losses


def nan_literal(lines):
    """NDJSON; json.dumps writes NaN as the bare token the write API takes."""
    return "\n".join(json.dumps(l) for l in lines) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from harness import Server
    workdir = tmp_path_factory.mktemp("report")
    server = Server(workdir / "server")
    server.start()
    runs = {}
    for run, lr, nan_at in [("mlp", 0.05, None), ("mlp-lr5", 0.5, None), ("blowup", 0.05, 420)]:
        lines, losses = demo_run(run, lr, nan_at)
        r = server.write(nan_literal(lines))
        assert r.status == 200, r
        runs[run] = losses
    wait_until(lambda: [a for a in server.get_json("/api/v1/alerts", {"project": PROJECT, "run": "blowup"})["alerts"]
                        if a["kind"] == "nan"], "the nan alert on 'blowup'")
    yield server, runs, workdir
    server.close()


def report(server, expect=200, **params):
    r = server.get("/api/v1/report", dict(params, project=params.get("project", PROJECT)), timeout=300)
    assert r.status == expect, r
    return r


def section(html, name):
    m = re.search(r'<section id="%s" data-section="%s">(.*?)</section>' % (name, name), html, re.S)
    assert m, "no section %s" % name
    return m.group(1)


def text_of(fragment):
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))


def fmt(v):
    return "%.6g" % v


def test_demo_run_report_has_every_section_with_exact_figures(data):
    server, runs, _ = data
    r = report(server, run="mlp")
    assert r.headers["Content-Type"].startswith("text/html")
    assert 'filename="report-mlp.html"' in r.headers["Content-Disposition"]
    html = r.text
    # self-contained: no script, no external reference of any kind
    assert "<script" not in html and "http://" not in html and "https://" not in html and "@import" not in html
    assert "<link" not in html and "src=" not in html

    summary = text_of(section(html, "summary"))
    assert "finished" in summary
    assert "0 – 599" in summary                          # steps
    assert "box-1" in summary and "sweep" in summary
    assert "59.9 s" in summary                            # duration: 599 steps 0.1 s apart
    assert "10" in summary                                # steps/s: 599 / 59.9
    losses = [v for v in runs["mlp"].values()]
    # final, best (exact min, with its step) of the loss
    row = re.search(r'<td class="mono">loss</td>(.*?)</tr>', section(html, "summary"), re.S).group(1)
    best_step = min(runs["mlp"], key=lambda s: runs["mlp"][s])
    assert fmt(losses[-1]) in row and fmt(min(losses)) in row and fmt(max(losses)) in row
    assert "step %d" % best_step in row
    acc = re.search(r'<td class="mono">val_accuracy</td>(.*?)</tr>', section(html, "summary"), re.S).group(1)
    assert "max, step 499" in acc  # 0.99 first reached there
    # where the time went: the phases' means and shares
    for phase, ms, share in [("data", "10", "10%"), ("forward", "30", "30%"), ("backward", "50", "50%"),
                             ("optimizer", "10", "10%")]:
        m = re.search(r"%s</td><td class=\"num\">([^<]*) ms</td><td class=\"num\">([^<]*)</td>" % phase,
                      section(html, "summary"))
        assert m and m.group(1) == ms and m.group(2) == share, (phase, m and m.groups())

    charts = section(html, "charts")
    for metric in ["loss", "val_loss", "val_accuracy", "lr"]:
        assert '<svg class="chart"' in charts and 'data-metric="%s"' % metric in charts, metric
    assert charts.count('class="band"') >= 4  # envelopes, not lines alone

    assert "No alerts were raised" in section(html, "alerts")

    config = text_of(section(html, "config"))
    assert "optim.lr" in config and "0.05" in config and "model.hidden" in config

    system = section(html, "system")
    gpu = re.search(r'system/gpu/0/utilization_percent</td>(.*?)</tr>', system, re.S).group(1)
    # idle: the first 12 samples (0..11 at 1 s apart) are 0%
    assert re.search(r"in 1 period: 0 s–1[12]", text_of(gpu).replace("  ", " ")), text_of(gpu)
    mem = re.search(r'system/gpu/0/memory_used_bytes</td>(.*?)</tr>', system, re.S).group(1)
    assert "7.00 GB" in mem  # the peak
    assert 'data-metric="system/gpu/0/utilization_percent"' in system
    assert 'data-section="ranks"' not in html  # not a distributed run


def test_report_of_a_run_with_alerts_shows_each_alert_with_its_evidence(data):
    server, runs, _ = data
    listed = server.get_json("/api/v1/alerts", {"project": PROJECT, "run": "blowup"})["alerts"]
    nan = next(a for a in listed if a["kind"] == "nan")
    html = report(server, run="blowup").text
    alerts = section(html, "alerts")
    assert 'class="chart timeline"' in alerts
    assert 'data-alert-id="%d"' % nan["id"] in alerts
    entry = re.search(r'data-alert-id="%d">(.*?)</div></div>' % nan["id"], alerts, re.S).group(1)
    assert "nan" in entry and "at step %d" % nan["step"] in entry
    assert htmllib.escape(nan["message"], quote=True) in entry or nan["message"] in text_of(entry)
    assert '<svg class="chart"' in entry  # the metric around the step, the alert marked
    assert 'class="mark"' in entry
    # the loss chart marks the alert; NaN buckets are flagged; the table counts them
    assert 'class="mark"' in section(html, "charts")
    assert "<title>NaN</title>" in section(html, "charts")
    row = re.search(r'<td class="mono">loss</td>(.*?)</tr>', section(html, "summary"), re.S).group(1)
    assert "(180 NaN)" in row


def test_comparison_report_shows_the_config_diff(data):
    server, _, _ = data
    html = report(server, run="mlp", compare="mlp-lr5").text
    config = section(html, "config")
    diff = re.search(r'<table class="diff" data-testid="config-diff">(.*?)</table>', config, re.S)
    assert diff, config[:2000]
    rows = re.findall(r"<tr>(.*?)</tr>", diff.group(1), re.S)
    keys = [text_of(re.search(r"<td[^>]*>(.*?)</td>", r, re.S).group(1)).strip() for r in rows[1:]]
    assert keys == ["optim.lr"], keys  # model.* and momentum are the same
    assert "0.05" in rows[1] and "0.5" in rows[1] and 'class="changed"' in rows[1]
    # both runs in the charts and the summary
    assert 'data-run="mlp-lr5"' in section(html, "charts")
    assert "final: mlp-lr5" in section(html, "summary")
    assert "Compared runs" in section(html, "summary")


@pytest.mark.parametrize("params,status,message", [
    ({}, 400, "query parameter 'run' is required"),
    ({"run": "nope"}, 404, "no run 'nope' in project 'demo'"),
    ({"run": "mlp", "format": "docx"}, 400, "format: must be 'html' or 'pdf', not 'docx'"),
    ({"run": "mlp", "compare": "nope"}, 404, "compare: no run 'nope' in project 'demo'"),
    ({"run": "mlp", "compare": "mlp"}, 400, "compare: 'mlp' is the run the report is about"),
    ({"run": "mlp", "compare": ""}, 400, "compare: empty run id"),
])
def test_bad_parameters_are_refused_naming_them(data, params, status, message):
    server, _, _ = data
    r = report(server, expect=status, **params)
    assert r.json()["error"] == message, r.json()


def test_twice_compared_run_is_refused(data):
    server, _, _ = data
    r = server.get("/api/v1/report", [("project", PROJECT), ("run", "mlp"), ("compare", "mlp-lr5"),
                                      ("compare", "mlp-lr5")])
    assert r.status == 400 and r.json()["error"] == "compare: 'mlp-lr5' is listed twice"


def cli(*args, cwd=None, env=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRAINWATCH_")}
    return subprocess.run([BIN, "report"] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, cwd=cwd,
                          env=dict(clean, **(env or {})), timeout=300)


def without_generated_time(html):
    return re.sub(r"generated [^<]*</p>", "", html)


def test_cli_writes_the_routes_report(data, tmp_path):
    server, _, _ = data
    done = cli("demo/mlp", "--compare", "mlp-lr5", "--server", server.url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote report-mlp.html ("), done.stdout
    written = (tmp_path / "report-mlp.html").read_text()
    route = report(server, run="mlp", compare="mlp-lr5").text
    assert without_generated_time(written) == without_generated_time(route)
    # --project and a bare run id, and --out
    done = cli("blowup", "--project", PROJECT, "--out", tmp_path / "b.html", "--server", server.url)
    assert done.returncode == 0, done.stderr
    assert "data-alert-id" in (tmp_path / "b.html").read_text()


def test_cli_errors_name_what_is_wrong(data, tmp_path):
    server, _, _ = data
    done = cli("demo/nope", "--server", server.url, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "trainwatch report: the server answered 404: no run 'nope' in project 'demo'\n"
    done = cli("demo/mlp", "--out", tmp_path / "r.txt", "--server", server.url)
    assert done.returncode == 2 and "--out: '%s' must end in .html or .pdf" % (tmp_path / "r.txt") in done.stderr
    done = cli("demo/", "--server", server.url)
    assert done.returncode == 2 and "PROJECT/RUN: 'demo/' names no run" in done.stderr
    done = cli("demo/mlp", "--out", tmp_path / "r.pdf", "--chromium", tmp_path / "no-chromium", "--server", server.url)
    assert done.returncode == 1 and "cannot start" in done.stderr and "no-chromium" in done.stderr
    assert not (tmp_path / "r.pdf").exists()
    done = cli("demo/mlp", "--server", "http://127.0.0.1:1", cwd=tmp_path)
    assert done.returncode == 1 and "127.0.0.1:1" in done.stderr


def pdf_pages(path):
    info = subprocess.run(["pdfinfo", str(path)], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return [subprocess.run(["pdftotext", "-layout", "-f", str(i), "-l", str(i), str(path), "-"],
                           stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
            for i in range(1, pages + 1)]


def assert_sections_start_pages(pages):
    """Each section starts a page of its own, in order (a long one may take more pages)."""
    starts = []
    for heading in ["Summary", "Charts", "Alerts", "Config", "System and GPU"]:
        found = [i for i, p in enumerate(pages) if re.search(r"^\s*%s\s*$" % heading, p, re.M)]
        assert found, (heading, [p[:200] for p in pages])
        starts.append(found[0])
    assert starts == sorted(starts) and len(set(starts)) == 5, starts
    assert "Training report: mlp" in pages[0]


@pytest.mark.skipif(not (HAVE_CHROMIUM and HAVE_PDFTOTEXT), reason="needs chromium and poppler-utils")
def test_cli_prints_the_pdf_with_a_page_per_section(data, tmp_path):
    server, runs, _ = data
    out = tmp_path / "mlp.pdf"
    done = cli("demo/mlp", "--compare", "mlp-lr5", "--out", out, "--server", server.url)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"%PDF")
    pages = pdf_pages(out)
    assert len(pages) >= 5
    assert_sections_start_pages(pages)
    text = "\n".join(pages)
    assert "optim.lr" in text and "forward" in text and "system/gpu/0/utilization_percent" in text
    assert fmt(min(runs["mlp"].values())) in text


@pytest.mark.skipif(not (HAVE_CHROMIUM and HAVE_PDFTOTEXT), reason="needs chromium and poppler-utils")
def test_route_prints_the_pdf(data, tmp_path):
    server, _, _ = data
    r = report(server, run="mlp", format="pdf")
    assert r.headers["Content-Type"] == "application/pdf"
    assert 'attachment; filename="report-mlp.pdf"' == r.headers["Content-Disposition"]
    path = tmp_path / "route.pdf"
    path.write_bytes(r.body)
    assert_sections_start_pages(pdf_pages(path))


def test_route_without_chromium_answers_501(server_factory, monkeypatch):
    monkeypatch.setenv("TRAINWATCH_CHROMIUM", "/nonexistent/chromium")
    server = server_factory()
    lines, _ = demo_run("r", 0.1)
    assert server.write(nan_literal(lines)).status == 200
    r = server.get("/api/v1/report", {"project": PROJECT, "run": "r", "format": "pdf"})
    assert r.status == 501
    assert r.json()["error"].startswith("format=pdf: this server has no Chromium to print with")
    assert server.get("/api/v1/report", {"project": PROJECT, "run": "r"}).status == 200


def test_tensorboard_like_run_without_system_metrics_or_timers(server_factory):
    server = server_factory()
    lines = [{"project": "tb", "run": "imported", "step": s, "time": T0 + s, "metrics": {"train/loss": 1.0 / (s + 1)}}
             for s in range(100)]
    assert server.write(lines).status == 200
    html = report(server, project="tb", run="imported").text
    assert "No system metrics were recorded" in section(html, "system")
    assert "No phase timers" in section(html, "summary")
    assert 'data-metric="train/loss"' in section(html, "charts")
    assert "No config recorded" in section(html, "config")


def test_distributed_run_gets_a_ranks_section(server_factory):
    server = server_factory()
    lines = []
    for rank in range(4):
        for step in range(50):
            lines.append({"project": "ddp", "run": "job", "rank": rank, "world_size": 4, "host": "node-%d" % (rank // 2),
                          "step": step, "time": T0 + step, "metrics": {
                              "loss": 1.0 / (step + 1), "time/step": 0.1 * (3 if rank == 3 else 1)}})
    assert server.write(lines).status == 200
    html = report(server, project="ddp", run="job").text
    ranks = section(html, "ranks")
    assert "4 ranks of a world of 4" in text_of(ranks)
    for rank in range(4):
        row = re.search(r'<tr data-rank="%d">(.*?)</tr>' % rank, ranks, re.S).group(1)
        assert "node-%d" % (rank // 2) in row and ">49<" in row, row
    slow = re.search(r'<tr data-rank="3">(.*?)</tr>', ranks, re.S).group(1)
    assert "<td class=\"num\">0.3</td>" in slow, slow  # its step time, three times the others'

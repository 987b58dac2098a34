"""The demo `make run` starts (sdk/python/examples/demo.py), run for real against a server: a
short version of it must leave everything the dashboard shows — metrics, samples as images with
captions, a text table, histograms, the graph — and a finished run."""
import os
import subprocess
import sys

DEMO = os.path.join(os.path.dirname(__file__), "..", "examples", "demo.py")


def test_the_demo_logs_metrics_images_text_and_finishes(server, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(
        [sys.executable, DEMO, "--server", server.url, "--project", "demo", "--name", "short",
         "--steps", "600", "--seconds", "0", "--blowup-at", "0.9"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = server.get_json("/api/v1/runs", {"project": "demo"})
    runs = runs["runs"] if isinstance(runs, dict) else runs
    assert [r["name"] for r in runs] == ["short"]
    run_id = runs[0]["id"]
    info = server.run_info("demo", run_id)
    assert info["status"] == "finished"
    kinds = {m["name"]: m["kind"] for m in server.metrics("demo", run_id)}
    assert kinds["samples/digits"] == "image" and kinds["samples/per_class_accuracy"] == "text"
    assert any(k == "histogram" for k in kinds.values()) and info["has_graph"]
    assert len(server.points("demo", run_id, "train/loss")) == 600

    images = server.get_json("/api/v1/images", {"project": "demo", "run": run_id})
    assert sorted({i["step"] for i in images}) == [0, 500, 599]
    at_500 = [i for i in images if i["step"] == 500]
    assert [i["index"] for i in at_500] == list(range(8))
    assert all(i["mime"] == "image/png" and (i["width"], i["height"]) == (32, 32) for i in at_500)
    assert all(i["caption"].startswith("predicted ") and ", true " in i["caption"] for i in at_500)
    texts = server.get_json("/api/v1/texts", {"project": "demo", "run": run_id})
    assert [t["step"] for t in texts] == [0, 500, 599]
    assert texts[-1]["value"].startswith("| digit | accuracy |") and texts[-1]["value"].count("\n") == 11

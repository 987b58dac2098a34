"""`pip install ./sdk/python` into a virtual environment, reusing the configured build directory
(TRAINWATCH_BUILD_DIR, else the one the imported package was built in)."""
import os
import subprocess
import sys

import pytest

import trainwatch

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_dir():
    configured = os.environ.get("TRAINWATCH_BUILD_DIR")
    if configured:
        return configured
    # <build>/python/trainwatch/_trainwatch*.so
    return os.path.dirname(os.path.dirname(os.path.dirname(trainwatch._trainwatch.__file__)))


@pytest.mark.skipif(not os.path.exists(os.path.join(build_dir(), "CMakeCache.txt")),
                    reason="no configured build directory to reuse")
def test_pip_install_into_a_venv(tmp_path, server):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRAINWATCH_BUILD_DIR"] = build_dir()
    out = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                          "--no-index", SDK_DIR], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    code = ("import trainwatch as tw, os; "
            "assert os.path.realpath(tw.__file__).startswith(os.path.realpath(%r)), tw.__file__; "
            "r = tw.init(project='p', id='pip', server=%r, system_metrics=False); "
            "r.log({'x': 1.5}); r.finish()") % (str(venv), server.url)
    out = subprocess.run([python, "-c", code], env=env, cwd=str(tmp_path), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert server.points("p", "pip", "x")[0][2] == 1.5

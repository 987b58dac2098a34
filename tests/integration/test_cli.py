"""The command line's flags, against the real binary: every command's --help lists its flags (their
names are contracts: scripts and outside checks use them), and usage errors name the flag, print
the usage and exit 2. One table-driven parser serves every command (tools/flags.h), so
`--flag=value` works wherever `--flag value` does, and $TRAINWATCH_* give the defaults."""
import os
import subprocess

import pytest
from conftest import BIN

SERVER_FLAGS = ["--server", "--api-key", "--tls-ca"]
# Every flag of every command: removing or renaming one breaks this test on purpose.
FLAGS = {
    "import": ["--project"] + SERVER_FLAGS + ["--timeout", "--json", "--ranks"],
    "watch": ["--project"] + SERVER_FLAGS + ["--state", "--interval"],
    "export": ["--tfevents", "--project"] + SERVER_FLAGS,
    "detect": ["--rules", "--resolved"],
    "keys": ["--name", "--scope", "--project", "--expires", "--allow-from"] + SERVER_FLAGS + ["--data-dir"],
    "audit": ["--key", "--action", "--failures", "--limit"] + SERVER_FLAGS + ["--data-dir"],
    "sync": SERVER_FLAGS + ["--timeout"],
    "report": ["--compare", "--out", "--chromium", "--project"] + SERVER_FLAGS,
}
# Arguments that are complete but for what a test adds, per command.
VALID = {
    "import": ["logdir"],
    "watch": ["logdir"],
    "export": ["run", "--tfevents", "out"],
    "detect": ["points.jsonl"],
    "keys": ["list", "--server", "http://127.0.0.1:1"],
    "audit": ["--server", "http://127.0.0.1:1"],
    "sync": ["spool"],
    "report": ["demo/run"],
}
# A flag that takes a value, per command.
VALUE_FLAG = {"import": "--project", "watch": "--state", "export": "--project", "detect": "--rules",
              "keys": "--scope", "audit": "--key", "sync": "--server",
              "report": "--out"}


def cli(*args, env=None, cwd=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRAINWATCH_")}
    return subprocess.run([BIN] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=dict(clean, **(env or {})), cwd=cwd, timeout=60)


def assert_usage_error(done, command, message):
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    first, rest = done.stderr.split("\n", 1)
    assert first == "trainwatch %s: %s" % (command, message), done.stderr
    assert rest.startswith("usage: trainwatch " + command), done.stderr
    assert done.stdout == ""


def test_top_level_usage_names_every_command():
    done = cli("--help")
    assert done.returncode == 0
    for command in ["serve"] + list(FLAGS) + ["version"]:
        assert "\n  %s " % command in done.stdout, done.stdout
    unknown = cli("frobnicate")
    assert unknown.returncode == 2 and "unknown command 'frobnicate'" in unknown.stderr


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_help_lists_every_flag(command):
    done = cli(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: trainwatch " + command), done.stdout
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  -")]
    assert listed == FLAGS[command] + ["-h,"], done.stdout
    if "--server" in FLAGS[command]:
        for env in ["TRAINWATCH_SERVER", "TRAINWATCH_API_KEY", "TRAINWATCH_TLS_CA"]:
            assert "(env %s)" % env in done.stdout, done.stdout
    # -h is the same, and help wins over anything wrong beside it.
    assert cli(command, "-h").stdout == done.stdout
    assert cli(command, "--no-such-flag", "--help").stdout == done.stdout


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_unknown_flag_is_named(command):
    assert_usage_error(cli(command, *VALID[command], "--no-such-flag"), command, "unknown flag '--no-such-flag'")
    assert_usage_error(cli(command, *VALID[command], "--no-such-flag=1"), command, "unknown flag '--no-such-flag'")


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_missing_value_is_named(command):
    flag = VALUE_FLAG[command]
    done = cli(command, *VALID[command], flag)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("trainwatch %s: %s needs a value (%s " % (command, flag, flag)), done.stderr


@pytest.mark.parametrize("command, args, message", [
    ("import", ["logdir", "--timeout", "soon"], "--timeout: bad duration 'soon'"),
    ("watch", ["logdir", "--interval=0s"], "--interval: must be positive"),
    ("sync", ["spool", "--timeout", "5x"], "--timeout: bad duration '5x'"),
    ("audit", ["--server", "http://127.0.0.1:1", "--limit", "ten"], "--limit: bad number 'ten'"),
    ("detect", ["points.jsonl", "--resolved=yes"], "--resolved takes no value"),
])
def test_bad_values_are_named(command, args, message):
    done = cli(command, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("trainwatch %s: %s" % (command, message)), done.stderr
    assert "\nusage: trainwatch " + command in done.stderr


@pytest.mark.parametrize("command, args, message", [
    ("import", [], "missing LOGDIR"),
    ("watch", ["--state", "s.json"], "missing LOGDIR"),
    ("export", ["run"], "missing --tfevents DIR"),
    ("export", ["--tfevents", "out"], "missing RUN"),
    ("detect", ["--resolved"], "missing FILE.jsonl"),
    ("sync", [], "missing DIR"),
    ("report", [], "missing PROJECT/RUN"),
    ("report", ["demo/"], "PROJECT/RUN: 'demo/' names no run"),
    ("report", ["a/b", "--out", "r.txt"], "--out: 'r.txt' must end in .html or .pdf"),
    ("keys", [], "missing ACTION"),
    ("import", ["a", "b"], "unexpected argument 'b'"),
    ("sync", ["a", "b"], "unexpected argument 'b'"),
    ("keys", ["list", "extra", "--server", "http://127.0.0.1:1"], "unexpected argument 'extra'"),
    ("keys", ["rotate", "--server", "http://127.0.0.1:1"], "unknown action 'rotate'"),
    ("keys", ["create", "--server", "http://127.0.0.1:1"], "create needs a key name"),
    ("keys", ["list"], "give --server URL or --data-dir DIR"),
    ("audit", [], "give --server URL or --data-dir DIR"),
])
def test_missing_and_unexpected_arguments(command, args, message):
    assert_usage_error(cli(command, *args), command, message)


def test_flags_with_equals_and_environment_defaults_on_a_real_server(server, tmp_path):
    # Keys on a stopped data directory: --flag=value, a repeated flag, the positional NAME.
    data = tmp_path / "data"
    created = cli("keys", "create", "--name=ci", "--scope=write", "--project=a", "--project", "b",
                  "--data-dir=%s" % data)
    assert created.returncode == 0, created.stderr
    listed = cli("keys", "list", "--data-dir", data)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["ci", "write", "projects=a,b"], listed.stdout
    revoked = cli("keys", "revoke", "ci", "--data-dir", data)
    assert revoked.returncode == 0 and revoked.stdout == "revoked ci\n", revoked.stderr
    assert cli("keys", "list", "--data-dir", data).stdout == ""

    # sync of an empty spool root reaches the server named by the environment, or by the flag,
    # which wins over the environment.
    spool = tmp_path / "spool"
    spool.mkdir()
    via_env = cli("sync", spool, env={"TRAINWATCH_SERVER": server.url})
    assert via_env.returncode == 0, via_env.stderr
    assert via_env.stdout == "0 of 0 spool directories delivered (0 points)\n"

    # export needs the server: an unreachable one from the environment is overridden by --server=.
    server.write_ok([{"project": "cli", "run": "r1", "step": 1, "metrics": {"loss": 0.5}}])
    out = tmp_path / "tb"
    exported = cli("export", "r1", "--tfevents=%s" % out, "--project=cli", "--server=" + server.url,
                   env={"TRAINWATCH_SERVER": "http://127.0.0.1:1"})
    assert exported.returncode == 0, exported.stderr
    assert "1 points" in exported.stdout, exported.stdout
    assert len(os.listdir(out)) == 1
    unreachable = cli("export", "r1", "--tfevents", out, "--project", "cli",
                      env={"TRAINWATCH_SERVER": "http://127.0.0.1:1"})
    assert unreachable.returncode == 1, unreachable.stderr
    assert "127.0.0.1:1" in unreachable.stderr, unreachable.stderr


def test_double_dash_ends_the_flags(tmp_path):
    points = tmp_path / "--points.jsonl"
    points.write_text('{"project":"p","run":"r","step":1,"metrics":{"loss":1}}\n')
    done = cli("detect", "--", "--points.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""

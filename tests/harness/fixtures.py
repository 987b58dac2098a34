"""The pytest fixtures and report hook of the suites that run real servers. A suite's conftest.py
imports them (`from harness.fixtures import *`); it may override `server_class` to build a subclass.

`server` is a fresh server on a temporary data directory; `server_factory(*extra_args)` starts more
(with extra flags, or on a shared data directory); `module_server` is one server shared by a module's
tests (flags from the module's SERVER_ARGS). Each server's stdout/stderr go to files under its temp
directory; when a test fails, the tail of every server it used is attached to the report.
"""
import os

import pytest

from .ports import PortHold
from .server import BIN, Server, ServerFactory

__all__ = ["server_class", "server_factory", "server", "module_server", "refusing_url", "pytest_runtest_makereport"]


def _require_binary():
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN


@pytest.fixture(scope="session")
def server_class():
    return Server


@pytest.fixture
def server_factory(tmp_path, server_class):
    _require_binary()
    factory = ServerFactory(tmp_path, server_class)
    yield factory
    factory.stop_all()


@pytest.fixture
def server(server_factory):
    return server_factory()


@pytest.fixture(scope="module")
def module_server(request, tmp_path_factory, server_class):
    _require_binary()
    s = server_class(tmp_path_factory.mktemp("shared"), extra_args=getattr(request.module, "SERVER_ARGS", ()))
    request.module._SHARED_SERVERS = getattr(request.module, "_SHARED_SERVERS", []) + [s]
    s.start()
    yield s
    s.close()


@pytest.fixture
def refusing_url():
    """http://127.0.0.1:PORT where nothing listens: connections are refused for the whole test."""
    with PortHold() as hold:
        yield "http://127.0.0.1:%d" % hold.port


def _servers_of(item):
    found = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Server):
            found.append(value)
        elif isinstance(value, ServerFactory):
            found.extend(value.servers)
    found.extend(getattr(item.module, "_SHARED_SERVERS", []))
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seen = set()
        for s in _servers_of(item):
            if id(s) in seen or not s.log_paths:
                continue
            seen.add(id(s))
            name = s.url if s.port is not None else s.workdir
            report.sections.append(("trainwatch server %s stderr" % name, s.tail()))

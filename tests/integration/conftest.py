"""The integration tests' fixtures: real trainwatch server processes, from the shared harness package
(tests/harness). `server` is a fresh server on a temporary data directory, `server_factory(*extra_args)`
starts more, `module_server` is shared by a module's tests (flags from its SERVER_ARGS); see
harness/fixtures.py. Tests import helpers from here (`from conftest import http, loads, ...`).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: the harness package

from harness import (BIN, REPO, PortHold, Response, SeriesModel, Server, ServerFactory,  # noqa: E402,F401
                     bits, http, loads, query_string, tls_client_context)
from harness.fixtures import *  # noqa: E402,F401,F403 (fixtures and the report hook)

"""The test harness shared by tests/integration and sdk/python/tests: real server processes on ports
they bind themselves (server), HTTP helpers (client), held loopback ports (ports), the write rules
in Python (series_model), the wire schema's generated classes (ingest_pb), the pytest fixtures
(fixtures, imported by each suite's conftest.py) and wait_until (wait), the one way a test waits
for something to happen.

A suite puts tests/ on sys.path in its conftest.py and imports from here."""
from .client import Response, http, loads, query_string, tls_client_context
from .ports import PortHold
from .series_model import SeriesModel, bits
from .server import BIN, REPO, Server, ServerFactory, parse_serving_line
from .wait import wait_until

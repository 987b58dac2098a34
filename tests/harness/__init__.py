"""The test harness shared by tests/integration and sdk/python/tests: real server processes on ports
they bind themselves (server), HTTP helpers (client), held loopback ports (ports), the write rules
in Python (series_model), the wire schema's generated classes (ingest_pb) and the pytest fixtures
(fixtures, imported by each suite's conftest.py).

A suite puts tests/ on sys.path in its conftest.py and imports from here."""
from .client import Response, http, loads, query_string, tls_client_context
from .ports import PortHold
from .series_model import SeriesModel, bits
from .server import BIN, REPO, Server, ServerFactory, parse_serving_line

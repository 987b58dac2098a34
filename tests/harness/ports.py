"""Loopback ports held by a test, never picked and passed on.

A `PortHold` is a socket bound to 127.0.0.1 (port 0 unless told) with SO_REUSEADDR and never
listening. While it is open:
- connections to the port are refused (nothing listens), as for a port nobody uses;
- the kernel hands the port to no one else: a bind to port 0 and an outgoing connection skip a port
  that a socket is bound to, and a bind without SO_REUSEADDR to it fails;
- a server that sets SO_REUSEADDR (trainwatch's HTTP and gRPC listeners, Python's http.server,
  Go's net.Listen) binds it and listens all the same; connections then reach that server.
So a test can know a port before its server runs (a receiver that is down at first, an address
where nothing listens) and keep it across the server's restarts without a race.
"""
import socket


class PortHold:
    def __init__(self, port=0):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind(("127.0.0.1", port))
        except OSError:
            self._sock.close()
            raise
        self.port = self._sock.getsockname()[1]

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "PortHold(127.0.0.1:%d)" % self.port

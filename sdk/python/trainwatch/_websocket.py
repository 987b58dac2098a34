"""A minimal WebSocket client (RFC 6455) on the standard library, enough for the server's live
feed (`GET /api/v1/live`, docs/api.md): text messages in, a subscription out. ws:// and wss://
(an `ssl.SSLContext`), `Authorization: Bearer` on the upgrade, pings answered, fragmented
messages joined. One reader thread per connection; `close()` from any thread unblocks it.
"""
import base64
import os
import socket
import struct
import urllib.parse

_OP_CONT, _OP_TEXT, _OP_BINARY, _OP_CLOSE, _OP_PING, _OP_PONG = 0, 1, 2, 8, 9, 10
_MAX_MESSAGE_BYTES = 16 << 20  # the server's --max-websocket-queue-bytes bounds what it sends


class WebSocketError(OSError):
    """The connection could not be opened, broke, or the peer spoke something else."""


def websocket_url(server, path):
    """The ws:// (wss:// for https://) URL of `path` on the server whose HTTP base URL is `server`."""
    parts = urllib.parse.urlsplit(server)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + path, "", ""))


def _keep_alive(sock):
    """TCP keepalive probes after 30 s of silence: recv() waits without a timeout, and a peer that
    vanished without closing (a host gone, a partition) must still end it, within about a minute."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, option):  # Linux; elsewhere the system's defaults apply
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


class WebSocket:
    """One client connection. `recv()` from one thread; `send()`/`close()` from any."""

    def __init__(self, url, headers=None, ssl_context=None, timeout=10.0):
        """Connects and upgrades; raises WebSocketError (or OSError) on failure. `timeout` bounds
        the connect and the handshake only: afterwards recv() waits for as long as it takes."""
        parts = urllib.parse.urlsplit(url)
        secure = parts.scheme == "wss"
        port = parts.port or (443 if secure else 80)
        sock = socket.create_connection((parts.hostname, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _keep_alive(sock)
            if secure:
                sock = ssl_context.wrap_socket(sock, server_hostname=parts.hostname)
            self._sock = sock
            self._buffer = b""
            self._handshake(parts, headers or {})
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        self._closed = False

    def _handshake(self, parts, headers):
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        lines = ["GET %s HTTP/1.1" % (parts.path or "/"), "Host: %s" % parts.netloc,
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                 "Sec-WebSocket-Version: 13"]
        lines += ["%s: %s" % item for item in headers.items()]
        self._sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        while b"\r\n\r\n" not in self._buffer:
            self._fill("handshake")
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        if status.split(" ")[1:2] != ["101"]:
            raise WebSocketError("WebSocket upgrade refused: %s" % status)

    def _fill(self, what):
        data = self._sock.recv(65536)
        if not data:
            raise WebSocketError("connection closed during the %s" % what)
        self._buffer += data

    def _read(self, n):
        while len(self._buffer) < n:
            self._fill("message")
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def send(self, text, opcode=_OP_TEXT):
        """Sends one masked frame (clients must mask)."""
        payload = text.encode("utf-8") if isinstance(text, str) else text
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        self._sock.sendall(header + mask + masked)

    def recv(self):
        """The next text message (str); raises WebSocketError when the connection ends."""
        parts = []
        size = 0
        while True:
            first, second = self._read(2)
            fin, opcode, n = first & 0x80, first & 0x0F, second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            if second & 0x80:  # a masked server frame: allowed to read, never sent by ours
                mask = self._read(4)
                payload = bytes(b ^ mask[i & 3] for i, b in enumerate(self._read(n)))
            else:
                payload = self._read(n)
            if opcode == _OP_PING:
                self.send(payload, _OP_PONG)
                continue
            if opcode == _OP_PONG:
                continue
            if opcode == _OP_CLOSE:
                raise WebSocketError("the server closed the connection")
            size += n
            if size > _MAX_MESSAGE_BYTES:
                raise WebSocketError("message over %d bytes" % _MAX_MESSAGE_BYTES)
            parts.append(payload)
            if fin:
                return b"".join(parts).decode("utf-8", "replace")

    def close(self):
        """Closes the socket; a recv() blocked in another thread raises WebSocketError."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

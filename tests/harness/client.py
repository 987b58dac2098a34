"""HTTP requests for the tests (urllib, every status returned), TLS client contexts, and JSON that
keeps "-0" a float."""
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body  # bytes
        self.headers = headers

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return loads(self.body)

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:500])


def tls_client_context(ca_file, cert=None, key=None):
    """An SSL context that trusts `ca_file` (and presents cert/key for mutual TLS)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    if cert:
        context.load_cert_chain(str(cert), str(key))
    return context


def http(method, url, body=None, headers=None, timeout=30, context=None):
    """One request; returns a Response for every HTTP status. Connection errors raise OSError.
    `context`: the SSL context for https:// URLs."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return Response(r.status, r.read(), dict(r.headers))
    except urllib.error.HTTPError as e:
        return Response(e.code, e.read(), dict(e.headers))


def _parse_int(text):
    # "-0" is a valid JSON number for negative zero; Python would make it the integer 0.
    return -0.0 if text == "-0" else int(text)


def loads(text):
    """json.loads that keeps "-0" as -0.0 (NaN/Infinity bare tokens are accepted as usual)."""
    return json.loads(text, parse_int=_parse_int)


def query_string(params):
    """params: dict or list of pairs (repeatable keys)."""
    return urllib.parse.urlencode(params if not isinstance(params, dict) else list(params.items()))

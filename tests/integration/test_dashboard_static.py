"""The embedded web dashboard (docs/design/dashboard.md, "Server side"): index.html at / and at every
unknown non-API path, Vite's hashed files under /assets/, caching headers, ETag revalidation, gzip,
HEAD, and the API key rule (static files need none, /api/ does).

Holds whichever dashboard the binary embeds: the real app (web/dist) or the "not built" placeholder,
which references an /assets/ file of its own for these checks.
"""
import gzip
import os
import re

import pytest

from conftest import http

IMMUTABLE = "public, max-age=31536000, immutable"
CONTENT_TYPES = {
    ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
    ".png": "image/png", ".woff2": "font/woff2", ".json": "application/json", ".map": "application/json",
    ".ico": "image/x-icon", ".html": "text/html",
}


def header(r, name):
    """A response header, by case-insensitive name; None when absent."""
    for key, value in r.headers.items():
        if key.lower() == name.lower():
            return value
    return None


def asset_urls(html):
    """The /assets/ files index.html references (src= or href=, absolute or ./-relative)."""
    found = re.findall(r"""(?:src|href)\s*=\s*["'](?:\.?/)?(assets/[^"'?#]+)""", html)
    return sorted(set("/" + path for path in found))


@pytest.fixture(scope="module")
def index(module_server):
    r = module_server.get("/")
    assert r.status == 200, r
    return r


@pytest.fixture(scope="module")
def assets(index):
    urls = asset_urls(index.text)
    assert urls, "index.html references no /assets/ file:\n" + index.text[:2000]
    return urls


def test_root_serves_index_html_uncached(module_server, index):
    assert header(index, "Content-Type").startswith("text/html"), index.headers
    assert header(index, "Cache-Control") == "no-cache", index.headers
    assert re.match(r'^(W/)?"[^"]+"$', header(index, "ETag") or ""), index.headers
    assert "<html" in index.text.lower()
    assert module_server.get("/index.html").body == index.body

    head = http("HEAD", module_server.url + "/")
    assert head.status == 200 and head.body == b"", head
    assert int(header(head, "Content-Length")) == len(index.body), head.headers
    assert header(head, "ETag") == header(index, "ETag")


def test_assets_are_immutable_with_their_content_type(module_server, assets):
    for url in assets:
        r = module_server.get(url)
        assert r.status == 200, (url, r)
        assert header(r, "Cache-Control") == IMMUTABLE, (url, r.headers)
        assert header(r, "ETag"), (url, r.headers)
        assert header(r, "Content-Encoding") is None, (url, r.headers)  # none asked for
        expected = CONTENT_TYPES.get(os.path.splitext(url)[1])
        if expected:
            assert header(r, "Content-Type").split(";")[0] == expected, (url, r.headers)
        assert r.body, url
        head = http("HEAD", module_server.url + url)
        assert head.status == 200 and head.body == b"", (url, head)
        assert int(header(head, "Content-Length")) == len(r.body), (url, head.headers)
    # A missing hashed file is a 404, not index.html (a stale page must not get HTML as a script).
    r = module_server.get("/assets/no-such-file-0000.js")
    assert r.status == 404 and "error" in r.json(), r


def test_etag_revalidation(module_server, assets):
    for url in ["/"] + assets:
        first = module_server.get(url)
        etag = header(first, "ETag")
        again = module_server.get(url, headers={"If-None-Match": etag})
        assert again.status == 304 and again.body == b"", (url, again)
        assert header(again, "ETag") == etag, (url, again.headers)
        assert header(again, "Cache-Control") == header(first, "Cache-Control"), (url, again.headers)
        assert module_server.get(url, headers={"If-None-Match": 'W/' + etag}).status == 304, url
        assert module_server.get(url, headers={"If-None-Match": '"not-it", ' + etag}).status == 304, url
        other = module_server.get(url, headers={"If-None-Match": '"not-it"'})
        assert other.status == 200 and other.body == first.body, (url, other)


def test_gzip_negotiation(module_server, assets):
    gzipped = 0
    for url in ["/"] + assets:
        plain = module_server.get(url)
        packed = module_server.get(url, headers={"Accept-Encoding": "gzip, deflate, br"})
        assert packed.status == 200, (url, packed)
        assert header(packed, "Content-Type") == header(plain, "Content-Type"), url
        if header(packed, "Content-Encoding") is None:
            assert packed.body == plain.body, url  # no gzip copy stored: it would not be smaller
            continue
        gzipped += 1
        assert header(packed, "Content-Encoding") == "gzip", (url, packed.headers)
        assert "accept-encoding" in header(packed, "Vary").lower(), (url, packed.headers)
        assert "accept-encoding" in (header(plain, "Vary") or "").lower(), (url, plain.headers)
        assert gzip.decompress(packed.body) == plain.body, url
        assert len(packed.body) < len(plain.body), url
        etag = header(packed, "ETag")
        assert etag and etag != header(plain, "ETag"), (url, packed.headers, plain.headers)
        assert module_server.get(url, headers={"Accept-Encoding": "gzip", "If-None-Match": etag}).status == 304
        refused = module_server.get(url, headers={"Accept-Encoding": "gzip;q=0, identity"})
        assert header(refused, "Content-Encoding") is None and refused.body == plain.body, url
    assert gzipped >= 1, "no file came back gzip-compressed (index.html compresses well)"


def test_unknown_paths_get_index_html(module_server, index):
    for path in ("/runs", "/alerts", "/runs/project/run", "/a/b/c.html", "/favicon-missing.png"):
        r = module_server.get(path)
        assert r.status == 200, (path, r)
        assert r.body == index.body, path
        assert header(r, "Cache-Control") == "no-cache", (path, r.headers)
        assert header(r, "Content-Type").startswith("text/html"), (path, r.headers)
    r = module_server.get("/runs", params={"x": "1"})
    assert r.status == 200 and r.body == index.body, r


def test_api_paths_stay_json(module_server):
    for path in ("/api/v1/nope", "/api/nope", "/api", "/api/"):
        r = module_server.get(path)
        assert r.status == 404, (path, r)
        assert header(r, "Content-Type") == "application/json", (path, r.headers)
        assert "error" in r.json(), (path, r)
    # Only GET and HEAD reach the static files.
    r = module_server.post("/", b"")
    assert r.status == 404 and "error" in r.json(), r
    assert module_server.get("/healthz").json() == {"status": "ok"}


def test_static_files_need_no_api_key(server_factory):
    keyed = server_factory("--api-key", "s3cret")
    index = keyed.get("/")
    assert index.status == 200 and "<html" in index.text.lower(), index
    for url in asset_urls(index.text):
        assert keyed.get(url).status == 200, url
    assert keyed.get("/runs/deep/link").status == 200
    assert http("HEAD", keyed.url + "/").status == 200

    assert keyed.get("/api/v1/runs").status == 401
    assert keyed.get("/api/v1/nope").status == 401  # no hint of which API paths exist
    assert keyed.get("/metrics").status == 401
    r = keyed.get("/api/v1/runs", headers={"Authorization": "Bearer s3cret"})
    assert r.status == 200, r
    assert keyed.get("/api/v1/nope", headers={"Authorization": "Bearer s3cret"}).status == 404

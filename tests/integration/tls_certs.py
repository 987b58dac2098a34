"""A throw-away certificate authority for TLS tests, made with the openssl command line.

    ca = TestCa(tmp_path / "ca")
    server = ca.issue("server", hosts=["127.0.0.1", "localhost"])   # Issued(cert, key)
    client = ca.issue("client-1", client=True)

Every certificate gets a fresh serial number, so that a test can tell which one a server presents.
"""

import itertools
import pathlib
import subprocess
from dataclasses import dataclass

_serials = itertools.count(1000)


@dataclass
class Issued:
    cert: pathlib.Path  # PEM certificate
    key: pathlib.Path  # PEM private key (unencrypted)
    serial: int


def _openssl(*args, cwd=None):
    subprocess.run(["openssl", *map(str, args)], check=True, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class TestCa:
    __test__ = False  # not a pytest class

    def __init__(self, directory, name="trainwatch test CA"):
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.key = self.dir / "ca.key"
        self.cert = self.dir / "ca.pem"
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", self.key, "-out", self.cert, "-days", "2", "-subj", f"/CN={name}",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def issue(self, name, hosts=("127.0.0.1", "localhost"), client=False, days=2, directory=None):
        """A certificate signed by this CA: for a server (subjectAltName = hosts) or a client."""
        out = pathlib.Path(directory) if directory else self.dir
        out.mkdir(parents=True, exist_ok=True)
        serial = next(_serials)
        key = out / f"{name}.key"
        csr = out / f"{name}.csr"
        cert = out / f"{name}.pem"
        ext = out / f"{name}.ext"
        if client:
            ext.write_text("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")
        else:
            alt = ",".join(("IP:" if h.replace(".", "").isdigit() or ":" in h else "DNS:") + h for h in hosts)
            ext.write_text(f"subjectAltName={alt}\nextendedKeyUsage=serverAuth\n"
                           "keyUsage=critical,digitalSignature,keyEncipherment\n")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
        _openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key, "-set_serial", serial,
                 "-days", days, "-out", cert, "-extfile", ext)
        return Issued(cert=cert, key=key, serial=serial)

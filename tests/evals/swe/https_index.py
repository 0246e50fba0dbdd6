"""A tiny PEP 503 package index over HTTPS, its server certificate signed by a CA made here.

The CA's key is Ed25519 from a fixed seed and its validity fixed, so the CA certificate is the
same bytes on every run (Ed25519 signatures are deterministic): images that trust it keep
their content-hash tags, and the SWE base image is not rebuilt for every test run.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import http.server
import io
import ipaddress
import ssl
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

SEED = hashlib.sha256(b"harness test CA").digest()
VALID = (dt.datetime(2020, 1, 1, tzinfo=dt.UTC), dt.datetime(2100, 1, 1, tzinfo=dt.UTC))
PACKAGE, VERSION = "harnessdemo", "1.0"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_certs(folder: Path, ip: str) -> tuple[Path, Path, Path]:
    """ca.pem (the CA only the test trusts), server.pem and server.key for `ip`."""
    ca_key = ed25519.Ed25519PrivateKey.from_private_bytes(SEED)
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("harness test CA"))
        .issuer_name(_name("harness test CA"))
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(VALID[0])
        .not_valid_after(VALID[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, None)
    )
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    server = (
        x509.CertificateBuilder()
        .subject_name(_name(ip))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
        .sign(ca_key, None)
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def make_wheel() -> tuple[str, bytes]:
    """A pure-Python wheel whose module holds VALUE = 42."""
    dist = f"{PACKAGE}-{VERSION}.dist-info"
    files = {
        f"{PACKAGE}/__init__.py": b"VALUE = 42\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {VERSION}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: harness-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return f"{PACKAGE}-{VERSION}-py3-none-any.whl", buf.getvalue()


@contextmanager
def https_index(folder: Path, ip: str):
    """Serve /simple/<package>/ and the wheel over HTTPS on `ip`; yields (index URL, CA file)."""
    ca, cert, key = make_certs(folder, ip)
    wheel, data = make_wheel()
    sha = hashlib.sha256(data).hexdigest()
    pages = {
        "/simple/": f'<a href="{PACKAGE}/">{PACKAGE}</a>'.encode(),
        f"/simple/{PACKAGE}/": f'<a href="/files/{wheel}#sha256={sha}">{wheel}</a>'.encode(),
        f"/files/{wheel}": data,
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path if self.path.endswith((".whl", "/")) else self.path + "/")
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/octet-stream" if self.path.endswith(".whl") else "text/html")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((ip, 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://{ip}:{server.server_address[1]}/simple", ca
    finally:
        server.shutdown()
        server.server_close()

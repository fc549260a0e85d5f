"""A certificate authority and a server certificate of the test's own (openssl), for servers with
TLS on: the certificate names 127.0.0.1 and localhost."""

import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder: Path, name: str = "ca") -> dict[str, Path]:
    """{ca, cert, key} in `folder`: a CA and a server certificate it signed."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=test {name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=folder)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key",
             "-out", "server.csr", cwd=folder)  # fmt: skip
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    signing = ("-CA", f"{name}.pem", "-CAkey", f"{name}.key", "-CAcreateserial", "-days", "2")
    _openssl("x509", "-req", "-in", "server.csr", *signing, "-extfile", "san.cnf", "-out", "server.pem",
             cwd=folder)  # fmt: skip
    return {"ca": folder / f"{name}.pem", "cert": folder / "server.pem", "key": folder / "server.key"}

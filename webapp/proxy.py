"""The buffering proxy in front of gunicorn (`make start`, compose): nginx reads each request whole,
at the client's pace, before gunicorn's synchronous workers see it, so slow clients (headers sent,
no body; a body dripped a byte at a time) cost nginx a connection, never a worker. Large bodies
are taken only where uploads go, and buffered to disk.

`python -m webapp.proxy --listen 127.0.0.1:8000 --upstream unix:/path/web.sock --run-dir .run`
prints the configuration; nginx runs it in the foreground (`nginx -c FILE`), so its pid is the
one `make start` records and `make stop` stops.
"""

import argparse
import os
import sys
from pathlib import Path

# Where uploads go (imports of logs, exported experiments): the only paths that take large bodies.
UPLOAD_PATHS = ("/api/imports/", "/api/experiments/import/", "/imports/new/", "/experiments/import/")
# Any other request's body: forms, JSON definitions, triage notes.
SMALL_BODY = "1m"
# A client that sends nothing for this long (between two reads) is dropped.
CLIENT_SILENCE_S = 30


def nginx_config(
    listen: str, upstream: str, run_dir: Path, upload_max_bytes: int, longest_request_s: int
) -> str:
    """The configuration text; every path in it is under `run_dir` (absolute)."""
    run_dir = run_dir.resolve()
    temp = run_dir / "nginx"
    # root's nginx hands its workers to an unprivileged user; anyone else's runs as itself
    user = "user nobody nogroup;" if os.geteuid() == 0 else ""
    uploads = "|".join(path.lstrip("/") for path in UPLOAD_PATHS)
    proxied = f"""
            proxy_pass http://recovery_lab;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_request_buffering on;
            proxy_buffering on;
            proxy_read_timeout {longest_request_s}s;
            proxy_send_timeout {longest_request_s}s;"""
    return f"""# Written by webapp/proxy.py for `make start`; see docs/operations.md.
{user}
worker_processes 1;
daemon off;
pid {run_dir}/nginx-master.pid;
error_log {run_dir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    client_header_timeout {CLIENT_SILENCE_S}s;
    client_body_timeout {CLIENT_SILENCE_S}s;
    send_timeout {CLIENT_SILENCE_S}s;
    keepalive_timeout 15s;
    client_max_body_size {SMALL_BODY};
    server_tokens off;
    upstream recovery_lab {{ server {upstream}; }}
    server {{
        listen {listen};
        location / {{{proxied}
        }}
        location ~ ^/({uploads})$ {{
            client_max_body_size {upload_max_bytes};{proxied}
        }}
    }}
}}
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT the dashboard is opened at")
    parser.add_argument("--upstream", required=True, help="gunicorn's address (unix:PATH or HOST:PORT)")
    parser.add_argument("--run-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.conf import settings

    for part in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (args.run_dir / "nginx" / part).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # the workers (nobody) write buffered uploads there
        for folder in (args.run_dir / "nginx").rglob("*"):
            os.chown(folder, 65534, 65534)
        os.chown(args.run_dir / "nginx", 65534, 65534)
    sys.stdout.write(
        nginx_config(
            args.listen, args.upstream, args.run_dir, settings.UPLOAD_MAX_BYTES, settings.LONGEST_REQUEST_S
        )
    )


if __name__ == "__main__":
    main()

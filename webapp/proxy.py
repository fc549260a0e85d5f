"""The buffering proxy in front of gunicorn (`make start`, compose): nginx reads each request whole,
at the client's pace, before gunicorn's synchronous workers see it, so slow clients (headers sent,
no body; a body dripped a byte at a time) cost nginx a connection, never a worker. Large bodies
are taken only where uploads go, and buffered to disk.

`python -m webapp.proxy --listen 127.0.0.1:8000 --upstream unix:.run/web/web.sock --run-dir .run`
prints the configuration; nginx runs it in the foreground (`nginx -c FILE`), so its pid is the
one `make start` records and `make stop` stops.

It also makes the run folder the operator's (logs, pids, the configuration), which nginx's workers
may pass through, not list, to reach two folders: gunicorn's socket's (which only they and the
operator may enter, so no other local user reaches a sync worker past nginx) and their own
temporary files'.
"""

import argparse
import os
import pwd
import shutil
import sys
from pathlib import Path

# Where uploads go (imports of logs, exported experiments): the only paths that take large bodies.
UPLOAD_PATHS = ("/api/imports/", "/api/experiments/import/", "/imports/new/", "/experiments/import/")
# Any other request's body: forms, JSON definitions, triage notes.
SMALL_BODY = "1m"
# A client that sends nothing for this long (between two reads) is dropped.
CLIENT_SILENCE_S = 30
# Who nginx's workers run as when root starts it (Debian's nginx's own account). Not `nobody`:
# any daemon may run as that one, and it would reach the socket too.
WORKERS_USER = "www-data"
TEMP_FOLDERS = ("body", "proxy", "fastcgi", "uwsgi", "scgi")


def nginx_config(
    listen: str, upstream: str, run_dir: Path, upload_max_bytes: int, longest_request_s: int
) -> str:
    """The configuration text; every path in it is under `run_dir` (absolute)."""
    run_dir = run_dir.resolve()
    temp = run_dir / "nginx"
    # root's nginx hands its workers to an unprivileged user; anyone else's runs as itself
    user = f"user {WORKERS_USER};" if os.geteuid() == 0 else ""
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


def workers_gid() -> int | None:
    """The group of nginx's workers where root starts it; None where they run as the operator."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(WORKERS_USER).pw_gid
    except KeyError:
        raise SystemExit(
            f"nginx's workers run as {WORKERS_USER} when root starts them, and this machine has no "
            f"such user: install Debian's nginx-common (it makes it), or: useradd --system {WORKERS_USER}"
        ) from None


def _open_to_workers(folder: Path, gid: int | None, mode: int) -> None:
    """The operator's folder, which the workers' group may use as `mode` says (where they are not
    the operator themselves)."""
    if gid is None:
        os.chmod(folder, 0o700)
    else:
        os.chown(folder, os.geteuid(), gid)
        os.chmod(folder, mode)


def prepare_run_dir(run_dir: Path, socket_dir: Path | None) -> None:
    """The run folder and the two the workers use in it, as the module's docstring says."""
    gid = workers_gid()
    run_dir.mkdir(mode=0o700, exist_ok=True)
    _open_to_workers(run_dir, gid, 0o710)  # passed through, never listed
    if socket_dir is not None:
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        _open_to_workers(socket_dir, gid, 0o750)
    # Made afresh: nothing in them outlives nginx, and an older start gave them to `nobody`
    # (rmtree follows no link). Their parent stays the operator's, so no worker can swap one.
    temp = run_dir / "nginx"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(mode=0o700)
    _open_to_workers(temp, gid, 0o750)
    for part in TEMP_FOLDERS:
        (temp / part).mkdir(mode=0o700)
        if gid is not None:  # the workers write buffered bodies there
            os.chown(temp / part, pwd.getpwnam(WORKERS_USER).pw_uid, gid)


def socket_folder(upstream: str, run_dir: Path) -> Path | None:
    """The folder of gunicorn's unix socket, which must be one of its own in the run folder."""
    if not upstream.startswith("unix:"):
        return None
    folder = Path(upstream.removeprefix("unix:")).resolve().parent
    if folder.parent != run_dir.resolve():
        raise SystemExit(
            f"--upstream {upstream}: put the socket in a folder of its own in --run-dir "
            f"({run_dir}/web/web.sock): that folder is what keeps other users from it"
        )
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT the dashboard is opened at")
    parser.add_argument("--upstream", required=True, help="gunicorn's address (unix:PATH or HOST:PORT)")
    parser.add_argument("--run-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.conf import settings

    prepare_run_dir(args.run_dir, socket_folder(args.upstream, args.run_dir))
    sys.stdout.write(
        nginx_config(
            args.listen, args.upstream, args.run_dir, settings.UPLOAD_MAX_BYTES, settings.LONGEST_REQUEST_S
        )
    )


if __name__ == "__main__":
    main()

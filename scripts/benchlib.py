"""What the `make bench` parts share: a PostgreSQL database of their own, made anew and migrated,
processes (web, Celery worker) started in a process group of their own and stopped with it, so a
developer's running worker or test session is never disturbed, and a folder of their own made
fresh: the benches run as root, so they write nowhere a local user could have been first."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
ADMIN_URL = os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")


# On the disk, as users' runs are (/tmp may be memory). Sticky: what root makes in it stays root's.
DISK = Path("/var/tmp")


@contextlib.contextmanager
def fresh_folder(part: str, runner: bool = False) -> Iterator[Path]:
    """A folder of this bench part's own, made now by root (mkdtemp: a name nobody can have taken
    first, so nothing of another user's is in it, and nobody else may write in it): root's alone
    (0700), or entered but not listed by others (0711) when a runner's work directory goes in it,
    for the server's OS user to reach its own folder. Two benches never share one. Removed at
    the end; kept, and named, when the bench failed, for its logs."""
    folder = Path(tempfile.mkdtemp(prefix=f"recovery-lab-bench-{part}-", dir=DISK))
    os.chmod(folder, 0o711 if runner else 0o700)
    try:
        yield folder
    except BaseException:
        print(f"kept {folder} (the bench failed): its logs are there; remove it when read", file=sys.stderr)
        raise
    shutil.rmtree(folder)


def new_file(path: Path):
    """`path` made now and opened to write, root's alone: never a link followed, never a file
    someone else made first (O_EXCL, O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o600), "wb")


def database_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


def psql(*args: str, url: str = ADMIN_URL) -> str:
    done = subprocess.run(
        ["psql", url, "-v", "ON_ERROR_STOP=1", "-qtA", *args], capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"psql failed: {done.stderr.strip()}")
    return done.stdout


def fresh_database(name: str, env: dict | None = None) -> str:
    """Drop and create database `name`, migrate it with `manage.py migrate`; returns its URL."""
    psql("-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql("-c", f'CREATE DATABASE "{name}"')
    url = database_url(name)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"],
        check=True,
        env={**os.environ, **(env or {}), "DATABASE_URL": url},
    )
    return url


def own_environment(database: str, work_dir: Path) -> dict:
    """This process's environment, pointed at the bench's database, a broker queue of its own
    and a runner directory of its own (`work_dir`, in a folder of the bench's: fresh_folder)."""
    return {
        "DATABASE_URL": fresh_database(database),
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "CELERY_TASK_DEFAULT_QUEUE": f"recovery-lab-bench-{uuid.uuid4().hex[:8]}",
        "RUNNER_WORK_DIR": str(work_dir),
    }


def start(args: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    with new_file(log) as out:
        return subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def start_worker(processes: int, log: Path, env: dict | None = None) -> subprocess.Popen:
    """A real Celery worker of `processes` processes, as `make start` runs one."""
    command = [str(BIN / "celery"), "-A", "webapp", "worker", "-c", str(processes), "-l", "warning"]
    queue = (env or {}).get("CELERY_TASK_DEFAULT_QUEUE")
    queues = ["-Q", f"{queue},{queue}-alerts"] if queue else []  # the alerts queue too
    return start([*command, "--without-heartbeat", "--without-mingle", "--without-gossip", *queues], log, env)


def stop(process: subprocess.Popen) -> None:
    """A warm shutdown of the process group, forced after a minute."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until(condition, timeout_s: float, what: str, *processes: subprocess.Popen, logs: str = ""):
    """Poll `condition` until it returns something true; stop if a process we need has stopped."""
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        if any(p.poll() is not None for p in processes):
            raise SystemExit(f"a process stopped while waiting for {what}; see {logs or 'its log'}")
        time.sleep(0.5)
    return found


def carry_out(definition: dict, worker: subprocess.Popen, log: Path, timeout_s: float = 1800):
    """Save an experiment (Django set up, this process on the bench's database) and wait until
    its runs have ended, all done; returns the experiment."""
    from experiments import services
    from experiments.models import Run

    experiment, _ = services.create_experiment(definition)
    runs = Run.objects.filter(experiment=experiment)
    what = f"the runs of {definition['name']!r}"
    wait_until(lambda: all(run.is_finished for run in runs.all()), timeout_s, what, worker, logs=str(log))
    failed = [run.error for run in runs.all() if run.status != "done"]
    if failed:
        raise SystemExit(f"runs of {definition['name']!r} failed: {failed}")
    return experiment


RUNNER = [sys.executable, "-m", "runner"]  # the host runner from the source tree, as the transports ship it


def run_runner(spec: dict, folder: Path, what: str = "the run") -> dict:
    """One run through the host runner alone (no worker): the spec written to FOLDER, the bundle
    left in FOLDER/bundle; its result.json, or SystemExit naming what failed."""
    folder.mkdir(parents=True)
    with new_file(folder / "spec.json") as out:
        out.write(json.dumps(spec).encode())
    done = subprocess.run(
        [*RUNNER, "--spec", str(folder / "spec.json"), "--out", str(folder / "bundle")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    result = json.loads((folder / "bundle" / "result.json").read_text())
    if done.returncode != 0:
        raise SystemExit(f"{what} failed: {result.get('error')}")
    return result

"""The loaded dataset: prepared once per definition and server build, kept, and copied into each run's
datadir."""

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from .contract import SCRIPTED_WORKLOADS, RunFailed
from .events import progress
from .server import Server
from .workload import Sysbench

DATASETS_KEPT = 4
LAYOUT = 2


def copy_tree(source: Path, target: Path) -> None:
    """A datadir copied whole (reflinks where the filesystem has them: instant on btrfs/xfs)."""
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", "--", str(source), str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RunFailed(f"copying {source} to {target} failed: {done.stderr.strip()[:300]}")


class DatasetCache:
    """Loaded datasets, one per engine, server build, table count and size: loaded once, shut
    down slowly, and copied for each run, so a run's redo is its workload's and not the load's,
    and the load is paid once. The most recently used DATASETS_KEPT are kept. Only one runner
    works in a work directory at a time (hold_work_dir), so no two write one entry."""

    def __init__(self, base: Path):
        self.root = base / "datasets"

    @staticmethod
    def key(spec: dict, server_build: str) -> str:
        workload = spec["workload"]
        # LAYOUT: datasets made before the server ran as its own user with socket-authenticated
        # accounts are not reused
        identity = [LAYOUT, spec["engine"], server_build, workload["tables"], workload["table_size"]]
        if workload["name"] in SCRIPTED_WORKLOADS:  # tables of its own schema, not sysbench's OLTP one
            identity.append(workload["name"])
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]

    def ready(self, key: str) -> bool:
        return (self.root / key / "READY").exists()

    def restore(self, key: str, datadir: Path) -> None:
        copy_tree(self.root / key / "data", datadir)
        os.utime(self.root / key / "READY")  # recently used

    def keep(self, key: str, datadir: Path, about: dict) -> None:
        partial = self.root / f"{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        copy_tree(datadir, partial / "data")
        (partial / "READY").write_text(json.dumps(about))
        shutil.rmtree(self.root / key, ignore_errors=True)
        partial.rename(self.root / key)
        self.prune()

    def prune(self) -> None:
        entries = sorted(
            (p for p in self.root.iterdir() if (p / "READY").exists()),
            key=lambda p: (p / "READY").stat().st_mtime,
            reverse=True,
        )
        for stale in entries[DATASETS_KEPT:]:
            shutil.rmtree(stale, ignore_errors=True)


def prepare_dataset(spec: dict, server: Server, sysbench: Sysbench, base: Path, timeout: float) -> dict:
    """The run's datadir, loaded and cleanly shut down: from the cache, or loaded now (and kept
    for the next runs). Returns what was done, for the result."""
    started = time.monotonic()
    cache = DatasetCache(base)
    key = cache.key(spec, server.build)
    reuse = spec.get("reuse_dataset", True)
    (server.home / "tmp").mkdir(exist_ok=True)
    if reuse and cache.ready(key):
        progress("copying the cached dataset", 5)
        cache.restore(key, server.datadir)
        server.give_to_server(server.datadir)
        return {"key": key, "reused": True, "seconds": round(time.monotonic() - started, 3)}
    progress("creating a private server instance", 1)
    server.install()
    server.start(loading=True)
    server.wait_until_ready(timeout)
    server.create_workload_schema()
    progress(f"loading {spec['workload']['tables']} x {spec['workload']['table_size']} rows", 5)
    sysbench.prepare()
    progress("slow shutdown: the loaded dataset written out whole", 18)
    server.slow_shutdown(timeout)
    if reuse:
        cache.keep(
            key,
            server.datadir,
            {"engine": spec["engine"], **{k: spec["workload"][k] for k in ("tables", "table_size")}},
        )
    return {"key": key, "reused": False, "seconds": round(time.monotonic() - started, 3)}

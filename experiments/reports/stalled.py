"""Runs whose recovery stalled (runner/stall.py), in words: a result, never a recovery time. Each
is said with its buffer pool and the redo it had to replay, against the most redo a run of the
same engine recovered on that pool here and on a larger one ("recovery stalled with a 256M buffer
pool at 320 MiB of redo; it completed with 1G"). Plain rows in, sentences out."""

from experiments.analysis.cells import ENGINE_NAMES
from experiments.models import RunStatus
from recovery_lab_cli.units import SizeError, binary_bytes, parse_size


def _pool(row: dict) -> int | None:
    if row.get("buffer_pool_bytes"):
        return int(row["buffer_pool_bytes"])
    try:
        return parse_size(str(row["parameters"].get("buffer_pool_size")))
    except SizeError:
        return None


def _redo(row: dict) -> str:
    """The redo it had to replay: measured, else the crash plan's target."""
    if row.get("redo_bytes") is not None:  # a stalled run's: its last sample's before the kill
        return f"about {binary_bytes(row['redo_bytes'])} of redo"
    target = row["parameters"].get("crash_redo_bytes")
    return f"a redo target of {target}" if target else "an unmeasured redo volume"


def _most_recovered(done: list[dict], engine: str, pool: int, larger: bool) -> dict | None:
    """The run of `engine` that recovered the most redo on this pool (or, `larger`, on a larger one)."""
    found = [
        row
        for row in done
        if row["engine"] == engine
        and row.get("redo_bytes") is not None
        and (p := _pool(row)) is not None
        and (p > pool if larger else p == pool)
    ]
    return max(found, key=lambda row: row["redo_bytes"], default=None)


def stall_findings(rows: list[dict]) -> list[str]:
    """A sentence per stalled run: its pool and redo, and what recovered on that pool and a larger one."""
    done = [row for row in rows if row["status"] == RunStatus.DONE and not row.get("excluded")]
    found = []
    for row in (row for row in rows if row["status"] == RunStatus.STALLED):
        engine, pool = ENGINE_NAMES.get(row["engine"], row["engine"]), _pool(row)
        pool_text = f"a {binary_bytes(pool)} buffer pool" if pool else "its buffer pool"
        said = (
            f"Run #{row['id']} ({engine}): recovery stalled with {pool_text} at {_redo(row)}: nothing "
            "moved, so it was stopped, and it has no recovery time (its page quotes the server)"
        )
        if pool:
            same = _most_recovered(done, row["engine"], pool, larger=False)
            said += (
                f". The most redo {engine} recovered on that pool here: {binary_bytes(same['redo_bytes'])} "
                f"(run #{same['id']})"
                if same
                else f". No {engine} run here recovered on that pool"
            )
            larger = _most_recovered(done, row["engine"], pool, larger=True)
            if larger:
                said += (
                    f"; on a larger pool, {binary_bytes(larger['redo_bytes'])} with "
                    f"{binary_bytes(_pool(larger))} (run #{larger['id']})"
                )
        found.append(said + ".")
    return found

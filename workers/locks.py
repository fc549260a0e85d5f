"""One run at a time per host, across any number of workers and machines.

A PostgreSQL session-level advisory lock, held on a connection of its own for the whole run: if
the worker dies, its connection closes and the lock goes with it, so nothing stays "busy"
forever. Django's connection is not used because Celery's Django fix-up may close it.
"""

import contextlib

import psycopg
from django.db import connections

_NAMESPACE = 0x5245  # "RE": keeps our keys apart from other users of advisory locks


def _connect() -> psycopg.Connection:
    """A connection as Django's own would be made: host, user, password and every database
    OPTION (sslmode, sslrootcert, application_name...), less what only Django's cursors use."""
    params = connections["default"].get_connection_params()
    for djangos_own in ("cursor_factory", "context"):
        params.pop(djangos_own, None)
    return psycopg.connect(**params, autocommit=True)


@contextlib.contextmanager
def host_lock(host_id: int):
    """Yields True if this process now holds the host, False if another does."""
    conn = _connect()
    with contextlib.closing(conn):
        acquired = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_NAMESPACE, host_id)).fetchone()[0]
        try:
            yield acquired
        finally:
            if acquired:
                # A connection dropped during the run (PostgreSQL restarted) took the lock with it.
                with contextlib.suppress(psycopg.OperationalError):
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_NAMESPACE, host_id))


def busy_host_ids() -> set[int]:
    """Hosts whose lock some driver holds now, in one query (for beat's pass over all hosts)."""
    with _connect() as conn:
        rows = conn.execute(
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s"
            " AND objsubid = 2"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (_NAMESPACE,),
        ).fetchall()
    return {int(row[0]) for row in rows}

"""`make bench`, analysis part: GET /api/explore/ over 100,000 runs against the same rows
selected in psql, the CSVs against psql's copy of the same columns, and the experiment page and
compare of 200-run experiments at 10,000 and 100,000 runs of history.

It works in a database of its own (`recovery_lab_bench`, made anew each time, migrated, filled
by one INSERT ... SELECT over generate_series: 500 experiments x 200 runs of plausible values,
two engines, four redo log sizes, three buffer pools, a few suspect and excluded runs). Django
runs in this process against it; times are server times (the request through Django's full
middleware stack, the JSON rendered), warm, the median and the worst of 15.
"""

import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib import database_url, fresh_database, psql  # noqa: E402

from experiments.metrics import METRIC_NAMES  # noqa: E402

BENCH_DB = "recovery_lab_bench"
BENCH_URL = database_url(BENCH_DB)
RUNS = 100_000
RUNS_PER_EXPERIMENT = 200
REPEATS = 15
ANALYSED = (
    "status = 'done' AND NOT suspect AND NOT excluded "
    "AND redo_bytes IS NOT NULL AND recovery_seconds IS NOT NULL"
)
EXPLORE_SQL = f"SELECT engine, redo_bytes, recovery_seconds, id FROM experiments_run WHERE {ANALYSED}"
# What the runs CSV reads of each run (experiments/api/csv.py QUERIED), for psql's copy of it.
COPIED = (
    "id", "experiment_id", "host_label", "engine", "server_options", "repetition", "imported",
    "server_version", "suspect", "suspect_reason", "disturbed", "disturbed_reason", "excluded",
    "excluded_reason", "phases", "phase_resolution", "finished_at", "parameters", *METRIC_NAMES,
)  # fmt: skip


def fill_sql(experiments: int, runs_per_experiment: int) -> str:
    """SQL that fills a migrated, empty database with a team history of generated runs."""
    return f"""
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,
                       is_active, date_joined)
VALUES ('!', true, 'bench', '', '', '', true, true, now());
INSERT INTO experiments_experiment (name, definition, status, imported, tags, idempotency_key, created_at,
                                    finished_at, notes, uid, origin)
SELECT 'bench sweep ' || e, '{{}}'::jsonb, 'done', false, ARRAY['bench'], '', now() - e * interval '1 hour',
       now(), '', gen_random_uuid(), '{{}}'::jsonb
FROM generate_series(1, {experiments}) AS e;
INSERT INTO experiments_run (
    experiment_id, matrix_index, host_label, engine, parameters, server_options, repetition,
    buffer_pool_bytes, redo_log_bytes, insert_rate, status, progress, error, attempts, imported,
    source_sha256, server_version, phases, host_facts, effective_settings, suspect, suspect_reason,
    excluded, excluded_reason, queued_at, started_at, finished_at, redo_bytes, recovery_seconds,
    downtime_seconds, ready_seconds, clean_start_seconds, redo_apply_mb_per_s, workload_tps,
    achieved_insert_rate, notes, tags, crash_method)
SELECT e.id, r.n, 'bench-' || (r.n % 4), engine, jsonb_build_object(
           'buffer_pool_size', pool || 'M', 'redo_log_size', log_mb || 'M', 'insert_rate', rate),
       '{{}}'::jsonb, 1 + r.n % 3, pool::bigint << 20, log_mb::bigint << 20, rate,
       'done', '', '', 1, false, '', '10.11.' || (15 + r.n % 5), '{{}}'::jsonb, '{{}}'::jsonb, '{{}}'::jsonb,
       r.n % 997 = 0, CASE WHEN r.n % 997 = 0 THEN 'bench: impossible on purpose' ELSE '' END,
       r.n % 1009 = 0, '', now(), now(), now() - (r.n % 700) * interval '1 hour',
       redo, redo / (apply * 1e6), redo / (apply * 1e6) + 0.2, redo / (apply * 1e6) + 0.15, 0.1,
       apply, 3000 - rate / 10.0, rate * 0.97, '', '{{}}', 'sigkill'
FROM experiments_experiment AS e
CROSS JOIN generate_series(0, {runs_per_experiment - 1}) AS r(n)
CROSS JOIN LATERAL (
    SELECT CASE WHEN r.n % 2 = 0 THEN 'innodb' ELSE 'rocksdb' END AS engine,
           (ARRAY[128, 512, 2048])[1 + r.n % 3] AS pool,
           (ARRAY[64, 256, 1024, 4096])[1 + (r.n / 3) % 4] AS log_mb,
           (ARRAY[0, 200, 2000])[1 + (r.n / 12) % 3] AS rate,
           (1 + random() * 2000) * 1e6 AS redo,
           CASE WHEN r.n % 2 = 0 THEN 150 ELSE 400 END * (0.8 + random() * 0.4) AS apply
) AS v;
ANALYZE;
"""


FILL_SQL = fill_sql(RUNS // RUNS_PER_EXPERIMENT, RUNS_PER_EXPERIMENT)


def make_database() -> None:
    fresh_database(BENCH_DB)
    started = time.perf_counter()
    psql("-c", FILL_SQL, url=BENCH_URL)
    print(f"  {RUNS:,} runs generated in {time.perf_counter() - started:.1f} s")


def psql_times() -> list[float]:
    """The same rows explore returns, selected and transferred to psql (output discarded);
    psql's own \\timing, so connection start-up is not counted."""
    script = "\\timing on\n\\o /dev/null\n" + (EXPLORE_SQL + ";\n") * REPEATS
    output = subprocess.run(
        ["psql", BENCH_URL, "-qtA"], input=script, capture_output=True, text=True, check=True
    ).stdout
    return [float(line.split()[1]) / 1000 for line in output.splitlines() if line.startswith("Time:")]


def timed(client, url: str) -> tuple[list[float], object]:
    client.get(url)  # warm: first query plans, template loading
    times, response = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    return times, response


def line(label: str, times: list[float], note: str = "") -> None:
    print(
        f"  {label:<52} median {statistics.median(times) * 1000:7.1f} ms   worst "
        f"{max(times) * 1000:7.1f} ms {note}"
    )


PAGE_TARGET_S, COMPARE_TARGET_S, CSV_TIMES_PSQL = 0.200, 0.150, 3.0


def pages(client, label: str = "") -> tuple[float, float]:
    """The experiment page of a 200-run experiment and compare of two such experiments (the
    history's newest pairs: the host's A/A spread reads all of them); their medians."""
    from experiments.models import Experiment

    first, second = Experiment.objects.order_by("-id").values_list("id", flat=True)[:2]
    detail_times, _ = timed(client, f"/experiments/{first}/")
    line(f"{label}/experiments/{{id}}/ with {RUNS_PER_EXPERIMENT} runs", detail_times)
    compare_times, _ = timed(client, f"/api/compare/?experiments={second},{first}")
    line(f"{label}GET /api/compare/ two 200-run experiments", compare_times)
    return statistics.median(detail_times), statistics.median(compare_times)


def copy_times(select: str) -> list[float]:
    """Rows copied out by psql as CSV (\\copy to /dev/null, psql's own \\timing)."""
    copy = f"\\copy ({select}) TO '/dev/null' CSV\n"
    script = "\\timing on\n" + copy * 5
    output = subprocess.run(
        ["psql", BENCH_URL, "-qtA"], input=script, capture_output=True, text=True, check=True
    ).stdout
    return [float(line.split()[1]) / 1000 for line in output.splitlines() if line.startswith("Time:")]


def setup_django():
    os.environ["DATABASE_URL"] = BENCH_URL
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    os.environ["ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    return client


def smaller_history() -> tuple[float, float]:
    """The same two pages at a tenth of the history, in a process of its own (Django keeps its
    database for the life of a process)."""
    done = subprocess.run(
        [sys.executable, __file__, "--runs", str(RUNS // 10)], capture_output=True, text=True, check=True
    )
    *said, figures = done.stdout.strip().splitlines()  # its last line: the two medians, for here
    print("\n".join(said))
    page, compare = figures.split()
    return float(page), float(compare)


def main() -> None:
    if "--runs" in sys.argv:  # the smaller history's pages only (smaller_history)
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
        fresh_database(BENCH_DB)
        psql("-c", fill_sql(runs // RUNS_PER_EXPERIMENT, RUNS_PER_EXPERIMENT), url=BENCH_URL)
        print(f"  at {runs:,} runs:")
        page, compare = pages(setup_django(), "  ")
        print(f"{page} {compare}")
        return
    print(f"\nAnalysis at {RUNS:,} runs (database {BENCH_DB}; median and worst of {REPEATS}, warm)")
    small_page, small_compare = smaller_history()
    make_database()
    client = setup_django()
    rows = int(psql("-c", f"SELECT count(*) FROM experiments_run WHERE {ANALYSED}", url=BENCH_URL))
    sql = psql_times()
    line(f"psql: the {rows:,} rows explore returns", sql)
    explore_times, response = timed(client, "/api/explore/?x=redo_bytes&y=recovery_seconds&group=engine")
    body = response.json()
    assert body["count"] == rows, (body["count"], rows)
    ratio = statistics.median(explore_times) / statistics.median(sql)
    line("GET /api/explore/ recovery vs redo by engine", explore_times, f"({ratio:.1f}x psql)")
    explore_copied = copy_times(
        f"SELECT id, engine, redo_bytes, recovery_seconds FROM experiments_run WHERE {ANALYSED}"
    )
    line(f"psql: \\copy of those {rows:,} runs' four columns", explore_copied)
    explore_csv, _ = timed(client, "/api/explore/?x=redo_bytes&y=recovery_seconds&format=csv")
    explore_csv_ratio = statistics.median(explore_csv) / statistics.median(explore_copied)
    line("GET /api/explore/ same, as CSV", explore_csv, f"({explore_csv_ratio:.1f}x psql)")
    page_times, _ = timed(client, "/explore/?x=redo_bytes&y=recovery_seconds&group=engine")
    line("/explore/ page (WebGL figure embedded)", page_times)
    copied = copy_times(f"SELECT {', '.join(COPIED)} FROM experiments_run ORDER BY id")
    line(f"psql: \\copy of the runs CSV's columns, {RUNS:,} runs", copied)
    runs_csv, _ = timed(client, "/api/runs/?format=csv")
    csv_ratio = statistics.median(runs_csv) / statistics.median(copied)
    line("GET /api/runs/?format=csv, every run", runs_csv, f"({csv_ratio:.1f}x psql)")
    page, compare = pages(client)
    print(
        f"  growth from {RUNS // 10:,} to {RUNS:,} runs: experiment page {small_page * 1000:.0f} -> "
        f"{page * 1000:.0f} ms, compare {small_compare * 1000:.0f} -> {compare * 1000:.0f} ms"
    )
    checks = [
        ("explore < 300 ms and <= 3x psql", statistics.median(explore_times) < 0.3 and ratio <= 3),
        (f"explore's CSV <= {CSV_TIMES_PSQL:g}x psql \\copy", explore_csv_ratio <= CSV_TIMES_PSQL),
        (f"runs CSV <= {CSV_TIMES_PSQL:g}x psql \\copy", csv_ratio <= CSV_TIMES_PSQL),
        (f"experiment page <= {PAGE_TARGET_S * 1000:.0f} ms", page <= PAGE_TARGET_S),
        (f"compare <= {COMPARE_TARGET_S * 1000:.0f} ms", compare <= COMPARE_TARGET_S),
    ]
    for what, met in checks:
        print(f"  target {what}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()

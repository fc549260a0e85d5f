"""Parsers on real logs. Expected values were read off the files by a person."""

import json
import sys
from dataclasses import asdict
from datetime import datetime
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.parsers import parse_bytes, parse_path
from experiments.parsers.model import BEFORE_READY

from .conftest import DATA, ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from bench import run_log_later, warning_lines  # noqa: E402  the bench's own log, in small

MARIADB = DATA / "mariadb-10.11"
SCHEMA = json.loads((ROOT / "experiments" / "parsers" / "schemas" / "parsed_file.schema.json").read_text())


def test_mariadb_log_with_crash_and_clean_restart_has_three_episodes():
    parsed = parse_path(MARIADB / "innodb_binlog_during_load" / "error_with_clean_restart.log")
    assert parsed.kind == "error_log"
    assert parsed.flavor == "mariadb"
    assert parsed.server_version == "10.11.19-MariaDB-0+deb12u1-log"
    assert [e.crash_recovery for e in parsed.episodes] == [False, True, False]


def test_mariadb_crash_recovery_lsns_pages_and_rollback():
    crash = parse_path(MARIADB / "innodb_binlog_during_load" / "error.log").crash_episodes[0]
    # "Starting crash recovery from checkpoint LSN=44420" / "End of log at LSN=102229397"
    assert crash.checkpoint_lsn == 44420
    assert crash.crash_lsn == 102229397
    assert crash.redo_bytes == 102229397 - 44420
    assert crash.pages_to_recover == 3621  # "To recover: 3621 pages"
    # "2 transaction(s) which must be rolled back or cleaned up in total 2 row operations"
    assert (crash.trx_rolled_back, crash.rows_undone) == (2, 2)
    assert {
        "crash_recovery",
        "redo_scan",
        "redo_apply",
        "background_rollback",
        "binlog_recovery",
        "ready_for_connections",
    } <= {p.name for p in crash.phases}


def test_mariadb_recovery_after_workload():
    crash = parse_path(MARIADB / "innodb_after_workload" / "error.log").crash_episodes[0]
    assert (crash.checkpoint_lsn, crash.crash_lsn, crash.pages_to_recover) == (655238, 74274561, 3414)
    assert crash.trx_rolled_back is None


def test_runner_stamps_take_precedence_over_whole_second_server_times():
    log = (
        b"[runner 1795237093.605251] 2026-11-21  4:58:13 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 1\n"
        b"[runner 1795237093.650870] 2026-11-21  4:58:13 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=44760\n"
        b"[runner 1795237093.673876] 2026-11-21  4:58:13 0 [Note] InnoDB: End of log at LSN=10023552\n"
        b"[runner 1795237093.697279] 2026-11-21  4:58:13 0 [Note] InnoDB: To recover: 468 pages\n"
        b"[runner 1795237093.707554] 2026-11-21  4:58:13 0 [Note] InnoDB: 128 rollback segments are active.\n"
        b"[runner 1795237093.712724] 2026-11-21  4:58:13 0 [Note] /usr/sbin/mariadbd: ready for connections.\n"
    )
    crash = parse_bytes("error.log.stamped", log).crash_episodes[0]
    assert crash.recovery_seconds == pytest.approx(0.707554 - 0.650870, abs=1e-6)
    assert crash.phase("redo_apply").seconds == pytest.approx(0.707554 - 0.697279, abs=1e-6)
    assert crash.ready_seconds == pytest.approx(0.712724 - 0.605251, abs=1e-6)


def test_x_plugin_ready_line_is_not_the_server_ready():
    log = (
        b"2024-01-10T10:00:00.000000Z 0 [System] [MY-010116] [Server] /usr/sbin/mysqld (mysqld 8.0.36) starting as process 1\n"
        b"2024-01-10T10:00:03.000000Z 0 [System] [MY-011323] [Server] X Plugin ready for connections. Bind-address: '::' port: 33060\n"
        b"2024-01-10T10:00:04.500000Z 0 [System] [MY-010931] [Server] /usr/sbin/mysqld: ready for connections. Version: '8.0.36'\n"
    )
    parsed = parse_bytes("mysql8.log", log)
    assert parsed.flavor == "mysql" and parsed.server_version == "8.0.36"
    assert parsed.episodes[0].ready_seconds == 4.5


def test_innodb_status_log_section():
    parsed = parse_path(MARIADB / "innodb_binlog_during_load" / "innodb_status_at_crash.txt")
    assert parsed.kind == "innodb_status"
    assert (parsed.log.lsn, parsed.log.flushed_lsn, parsed.log.checkpoint_lsn) == (
        102083679,
        102079884,
        44420,
    )


def test_sysbench_report_totals_and_p95():
    report = parse_path(MARIADB / "innodb_after_workload" / "sysbench_report.txt").sysbench
    assert (report.transactions, report.tps, report.qps) == (15000, 5859.32, 35155.94)
    assert report.latency_ms["p95"] == 0.97
    assert report.total_time_s == 2.5592


def test_interrupted_sysbench_report_says_so_and_keeps_the_intervals():
    parsed = parse_path(MARIADB / "innodb_binlog_during_load" / "sysbench_partial.txt")
    assert len(parsed.sysbench.intervals) == 6
    assert parsed.sysbench.transactions is None
    assert any("interrupted" in w for w in parsed.warnings)


def test_rocksdb_log_wal_replay():
    parsed = parse_path(MARIADB / "myrocks_during_load" / "rocksdb_LOG")
    assert parsed.kind == "rocksdb_log"
    episode = parsed.episodes[0]
    assert episode.wal_files == [5, 16]
    # recovery_started time_micros 1795236087439850 -> recovery_finished 1795236087525852
    assert episode.recovery_seconds == pytest.approx(0.086002, abs=1e-6)


def test_binary_and_unknown_files_give_warnings_not_exceptions(tmp_path):
    binary = tmp_path / "ibdata1"
    binary.write_bytes(bytes(range(256)) * 64)
    assert parse_path(binary).kind == "unknown"
    assert parse_path(binary).warnings
    missing = parse_path(tmp_path / "nope.log")
    assert "cannot read" in missing.warnings[0]


def test_truncated_recovery_is_partial_with_a_warning():
    log = (
        b"2026-11-21  4:41:14 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 1\n"
        b"2026-11-21  4:41:14 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=44420\n"
        b"2026-11-21  4:41:15 0 [Note] InnoDB: End of l"
    )
    parsed = parse_bytes("cut.log", log)
    assert parsed.crash_episodes[0].checkpoint_lsn == 44420
    assert any("no end" in w for w in parsed.warnings)


def test_parselog_json_validates_against_the_schema():
    files = [str(p) for p in sorted(MARIADB.glob("*/*")) if p.name != "truth.json"]
    out = StringIO()
    call_command("parselog", *files, "--json", stdout=out)
    documents = json.loads(out.getvalue())
    assert len(documents) == len(files)
    for document in documents:
        jsonschema.validate(document, SCHEMA)
    assert {d["kind"] for d in documents} >= {
        "error_log",
        "innodb_status",
        "sysbench_report",
        "rocksdb_log",
        "rocksdb_status",
    }


def test_parselog_summary_reads_like_a_ticket():
    out = StringIO()
    call_command("parselog", str(MARIADB / "innodb_after_workload" / "error.log"), stdout=out)
    assert "CRASH RECOVERY" in out.getvalue()
    assert "redo 73,619,323 bytes" in out.getvalue()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=4000))
def test_no_bytes_make_a_parser_raise(content):
    parsed = parse_bytes("fuzz", content)
    assert parsed.parser_error is None, parsed.parser_error
    jsonschema.validate(parsed.to_dict(), SCHEMA)


def test_a_parser_that_raises_is_on_the_result_not_only_in_a_warning(monkeypatch):
    """A bug in a parser keeps what it found and says so: parser_error, a warning, the schema."""
    import experiments.parsers as parsers

    def broken(parsed, lines):
        parsed.kind = "sysbench_report"
        raise KeyError("p95")

    monkeypatch.setattr(parsers, "parse_sysbench", broken)
    parsed = parse_path(MARIADB / "innodb_after_workload" / "sysbench_report.txt")
    assert parsed.parser_error == "KeyError: 'p95'"
    assert any("the parser stopped early" in w for w in parsed.warnings)
    document = parsed.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["parser_error"] == "KeyError: 'p95'"
    assert "parser_error" not in parse_path(MARIADB / "innodb_after_workload" / "error.log").to_dict()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "2026-11-21  4:41:14 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=44420",
                "2026-11-21  4:41:15 0 [Note] InnoDB: End of log at LSN=102229397",
                "2026-11-21  4:41:15 0 [Note] InnoDB: To recover: 3621 pages",
                "2026-11-21  4:41:15 0 [Note] mariadbd: ready for connections.",
                "2026-11-21  4:41:15 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 1",
                "Version: '10.11.19-MariaDB'  socket: '/tmp/s'  port: 3306",
                "garbage \x00\x01 line",
                "",
                "LOG",
                "Log sequence number 12",
                "InnoDB: Apply batch completed",
                "130417 20:45:34  InnoDB: Starting an apply batch of log records to the database...",
                "InnoDB: Progress in percents: 0 1 2 3 4 5",
                "16 17 18 19",
                "2022-01-11T19:18:31.319354Z 1 [Note] [MY-012532] [InnoDB] Applying a batch of 770 redo log records ...",
                "2023-07-02T07:28:33.398409Z 1 [System] [MY-013577] [InnoDB] InnoDB initialization has ended.",
                "Thu Jan 28 00:27:28 2016 TokuFT recovery starting in env /var/lib/mysql",
                "2021-04-21T14:21:11.897232Z 0 [Note] InnoDB: 5.7.19 started; log sequence number 33614271542",
                "17:44:18.886229 [Note] [MY-012551] [InnoDB] Database was not shutdown normally!",
                "2026-11-22  6:37:10 0 [Note] InnoDB: Transaction 40148 was in the XA prepared state.",
            ]
        ),
        max_size=60,
    )
)
def test_any_order_of_real_lines_parses_the_same_with_and_without_the_keyword_scan(lines):
    content = "\n".join(lines).encode()
    parsed = parse_bytes("shuffled.log", content)
    assert parsed.parser_error is None, parsed.parser_error
    jsonschema.validate(parsed.to_dict(), SCHEMA)
    assert parsed.to_dict() == parse_bytes("shuffled.log", content, scan=False).to_dict()
    assert_no_impossible_value(parsed)


def assert_no_impossible_value(parsed) -> None:
    """No duration is negative or longer than the span of its own start; no LSN runs backwards."""
    assert parsed.parser_error is None, parsed.parser_error
    for episode in parsed.episodes:
        span = None
        if episode.started_at and episode.last_seen:
            span = (episode.last_seen - episode.started_at).total_seconds()
        for phase in episode.phases:
            if phase.seconds is not None:
                assert phase.seconds >= 0, (phase, parsed.warnings)
                if span is not None:
                    assert phase.seconds <= span + 1e-6, (phase, span)
                if phase.name in BEFORE_READY and episode.ready_at is not None:
                    assert (phase.end - episode.ready_at).total_seconds() <= 1, (phase, episode.ready_at)
        assert episode.ready_seconds is None or episode.ready_seconds >= 0
        assert episode.redo_bytes is None or episode.crash_lsn >= episode.checkpoint_lsn


STAMPS = st.datetimes(min_value=datetime(2010, 1, 1), max_value=datetime(2030, 1, 1))
TEMPLATES = (
    "{} 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN={}",
    "{} 0 [Note] InnoDB: End of log at LSN={}",
    "{} 0 [Note] InnoDB: To recover: 3621 pages",
    "{} 0 [Note] mariadbd: ready for connections.",
    "{} 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 1",
    "{} 0 [Note] InnoDB: Rollback of non-prepared transactions completed",
    "{} 0 [Note] InnoDB: log sequence number {}; transaction id 40159",
    "{} 0 [Note] InnoDB: Starting in background the rollback of recovered transactions",
    "{} 0 [Note] InnoDB: Buffer pool(s) load completed at 261122  6:28:09",
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TEMPLATES), STAMPS, st.integers(0, 10**12)), max_size=40))
def test_no_glued_or_shuffled_excerpt_yields_an_impossible_value(lines):
    """Lines of real kinds at any times (backwards, far apart), as pasted excerpts give them."""
    text = "\n".join(template.format(f"{moment:%Y-%m-%d %H:%M:%S}", lsn) for template, moment, lsn in lines)
    assert_no_impossible_value(parse_bytes("glued.log", text.encode()))


@pytest.mark.parametrize(
    "path", sorted(MARIADB.glob("*/error*.log")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_keyword_scan_matches_a_full_read_on_our_own_logs(path):
    assert parse_path(path).to_dict() == parse_path(path, scan=False).to_dict()


def test_keyword_scan_reads_across_block_boundaries(monkeypatch):
    from experiments.parsers import scan

    monkeypatch.setattr(scan, "BLOCK_BYTES", 97)  # lines and keywords straddle every block edge
    path = MARIADB / "innodb_binlog_during_load" / "error_with_clean_restart.log"
    assert parse_path(path).to_dict() == parse_path(path, scan=False).to_dict()


def test_parselog_on_binary_truncated_and_unknown_files_exits_cleanly_with_warnings(tmp_path):
    binary = tmp_path / "ibdata1"
    binary.write_bytes(bytes(range(256)) * 64)
    truncated = tmp_path / "cut.err"
    # cut in the middle of "End of log at LSN=74274561", right after the crash recovery began
    truncated.write_bytes(MARIADB.joinpath("innodb_after_workload", "error.log").read_bytes()[:4300])
    unknown = tmp_path / "notes.txt"
    unknown.write_text("remember to rotate the logs\n")
    out = StringIO()
    # no exception: exit code 0
    call_command("parselog", str(binary), str(truncated), str(unknown), "--json", stdout=out)
    documents = json.loads(out.getvalue())
    assert [d["kind"] for d in documents] == ["unknown", "error_log", "unknown"]
    assert all(d["warnings"] for d in (documents[0], documents[2]))
    crash = documents[1]["episodes"][-1]
    assert crash["crash_recovery"] and crash["checkpoint_lsn"] == 655238 and crash["recovery_seconds"] is None
    assert any("has no end" in w for w in documents[1]["warnings"])
    for document in documents:
        jsonschema.validate(document, SCHEMA)


def test_a_buffer_pool_load_asked_for_at_run_time_is_not_a_new_start():
    log = (
        b"2026-11-21  4:41:14 0 [Note] Starting MariaDB 10.11.19-MariaDB as process 1\n"
        b"2026-11-21  4:41:14 0 [Note] InnoDB: Loading buffer pool(s) from /var/lib/mysql/ib_buffer_pool\n"
        b"2026-11-21  4:41:14 0 [Note] InnoDB: Buffer pool(s) load completed at 261121  4:41:14\n"
        b"2026-11-21  4:41:15 0 [Note] mariadbd: ready for connections.\n"
        b"2026-11-21  5:02:00 9 [Note] InnoDB: Loading buffer pool(s) from /var/lib/mysql/ib_buffer_pool\n"
    )
    assert len(parse_bytes("runtime-load.log", log).episodes) == 1


STAMPED = Path(__file__).parent / "data" / "bundles" / "innodb_during_workload" / "error.log.stamped"
FILLER = b"".join(warning_lines(300))


def test_162_runs_of_one_log_with_filler_between_are_162_crash_recoveries():
    """The bench's log in small: each copy of a real run's stamped log an hour after the last,
    busy-server warnings between them; every start is counted, with the scan and without."""
    content = b"".join(run_log_later(hours) + FILLER for hours in range(162))
    once = parse_path(STAMPED)
    for scan in (True, False):
        parsed = parse_bytes("162.log", content, scan=scan)
        assert len(parsed.crash_episodes) == 162 and len(parsed.episodes) == 162 * len(once.episodes)
        assert {e.redo_bytes for e in parsed.crash_episodes} == {once.crash_episodes[0].redo_bytes}


def test_the_same_lines_at_the_same_moments_again_and_again_are_one_start_said_once():
    """Copies that are not shifted are one start pasted many times: counted once, and the warning
    says how many times it is there (once, not once per copy)."""
    parsed = parse_bytes("same.log", (STAMPED.read_bytes() + FILLER) * 20)
    assert len(parsed.crash_episodes) == 1
    pasted = [w for w in parsed.warnings if "are in the log 20 times" in w]
    assert len(pasted) == len(parse_path(STAMPED).episodes)


def _as_compose_logs(log: str, colours: bool, v1: bool = False) -> str:
    """The log as `docker compose logs` prints it: each line behind its service's name and "|",
    the web service's lines (stamped in their own format, another day) interleaved; `v1`: as
    docker-compose 1.x named containers, "project_service_1"."""
    db, web_name = ("lab_db_1", "lab_web_1") if v1 else ("db-1", "web-1")
    web = f"{web_name}  | [2026-11-25 10:00:00 +0000] [7] [INFO] Booting worker with pid: 7"
    out = []
    for n, line in enumerate(log.splitlines()):
        if n % 2:
            cut = len(web_name) + 2
            out.append(f"\x1b[32m{web[:cut]}\x1b[0m{web[cut:]}" if colours else web)
        out.append((f"\x1b[36m{db}   |\x1b[0m " if colours else f"{db}   | ") + line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("colours, v1", [(False, False), (True, False), (False, True), (True, True)])
def test_docker_compose_logs_are_read_like_the_plain_log(colours, v1):
    plain_text = (MARIADB / "innodb_after_workload" / "error.log").read_text()
    plain = parse_bytes("error.log", plain_text.encode())
    composed = parse_bytes("error.log", _as_compose_logs(plain_text, colours, v1).encode())
    assert composed.kind == "error_log" and composed.warnings == plain.warnings
    assert [asdict(e) for e in composed.episodes] == [asdict(e) for e in plain.episodes]
    assert any(e.crash_recovery for e in composed.episodes)


@pytest.mark.parametrize(
    "opening, event",
    [
        # an impossible date at the start, and a time_micros no clock can show
        ("2026/13/45-25:61:61.000000 7f RocksDB version: 6.29.5", '"time_micros": 99999999999999999999999'),
        ("2026/02/30-10:00:00.000000 7f RocksDB version: 6.29.5", '"time_micros": -99999999999999999999'),
        ("2026/11/25-10:00:00.000000 7f RocksDB version: 6.29.5", '"time_micros": 1e400'),
    ],
)
def test_a_rocksdb_log_with_impossible_moments_is_read_with_warnings(opening, event):
    log = "\n".join(
        [
            opening,
            f'2026/11/25-10:00:01.000000 7f EVENT_LOG_v1 {{{event}, "event": "recovery_started", '
            '"wal_files": [5, 16]}',
            '2026/11/25-10:00:02.000000 7f EVENT_LOG_v1 {"time_micros": 1795236087525852, '
            '"event": "recovery_finished"}',
        ]
    )
    parsed = parse_bytes("LOG", log.encode())
    assert parsed.kind == "rocksdb_log" and parsed.parser_error is None
    (episode,) = parsed.episodes
    assert episode.wal_files == [5, 16] and episode.crash_recovery
    assert episode.recovery_seconds is None  # no duration from a moment that cannot be
    assert parsed.warnings


MARIADB_11_8 = DATA / "mariadb-11.8"


def test_mariadb_11_8_innodb_recovery_is_read_like_10_11_s():
    """11.8's lines from a real run (tests/data/mariadb-11.8/README.md): the same recovery
    messages, the undo tablespaces logged before the rollback segments."""
    parsed = parse_path(MARIADB_11_8 / "innodb_at_redo_bytes" / "error.log.stamped")
    assert parsed.server_version == "11.8.9-MariaDB-0+deb13u1"
    assert [e.crash_recovery for e in parsed.episodes] == [False, False, True, False]
    crash = parsed.crash_episodes[0]
    assert (crash.checkpoint_lsn, crash.crash_lsn, crash.pages_to_recover) == (10593340, 37498629, 2042)
    assert crash.redo_bytes == 26_905_289
    # from "To recover: 2042 pages" to "Opened 3 undo tablespaces", on the runner's stamps
    assert crash.phase("redo_apply").seconds == pytest.approx(1795715091.501857 - 1795715091.303146, abs=1e-6)
    assert crash.recovery_seconds == pytest.approx(1795715091.501857 - 1795715090.937992, abs=1e-6)


def test_mariadb_11_8_myrocks_recovery_is_its_wal_replay():
    rocks = parse_path(MARIADB_11_8 / "myrocks_after_workload" / "rocksdb_LOG").crash_episodes[0]
    assert rocks.wal_files == [14, 22] and rocks.recovery_seconds == pytest.approx(0.179, abs=0.001)
    errors = parse_path(MARIADB_11_8 / "myrocks_after_workload" / "error.log.stamped")
    assert errors.server_version == "11.8.9-MariaDB-0+deb13u1" and len(errors.crash_episodes) == 1


MYSQL_9_7 = DATA / "mysql-9.7"


def test_mysql_9_7_multi_batch_recovery_matches_its_log():
    """A real MySQL 9.7 run of ours (tests/data/mysql-9.7/README.md, the values read by hand):
    Oracle's server as Debian packages it, not Percona; every batch's records; seed 001's own
    interval beside the phases."""
    parsed = parse_path(MYSQL_9_7 / "innodb_multi_batch" / "error.log")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "9.7.4-2")
    assert [e.crash_recovery for e in parsed.episodes] == [False, True, False]  # batches of 0: no crash
    crash = parsed.crash_episodes[0]
    assert (crash.checkpoint_lsn, crash.crash_lsn) == (31_833_376, 88_054_581)
    # its batches' "N redo log records" count pages (log0recv.cc's n_pages_to_recover), as MariaDB's
    # "To recover: N pages" does: 13,469 pages for 53.6 MiB of redo, and no records said
    assert len([b for b in crash.batches if b.pages]) == 15
    assert crash.pages_to_recover == 13_469 and crash.redo_records_applied is None
    assert [b.pages for b in crash.batches][:2] == [886, 830]
    assert crash.start_to_last_batch_seconds == pytest.approx(8.011564 - 6.563550, abs=1e-6)
    status = parse_path(MYSQL_9_7 / "innodb_multi_batch" / "innodb_status_at_crash.txt")
    assert (status.log.checkpoint_lsn, status.log.lsn, status.log.log_capacity) == (
        31_833_376,
        87_707_199,
        536_870_912,
    )


POSTGRESQL_15 = DATA / "postgresql-15"


def test_postgresql_15_crash_recovery_is_its_wal_replay_and_end_of_recovery_checkpoint():
    """A real PostgreSQL 15 crash (tests/data/postgresql-15/README.md): the redo replayed runs from
    "redo starts at" to "redo done at", on the lines' millisecond stamps."""
    parsed = parse_path(POSTGRESQL_15 / "crash_after_pgbench" / "server.log")
    assert (parsed.kind, parsed.flavor, parsed.server_version) == (
        "error_log",
        "postgresql",
        "PostgreSQL 15.20",
    )
    assert [e.crash_recovery for e in parsed.episodes] == [False, True]
    crash = parsed.crash_episodes[0]
    assert (crash.checkpoint_lsn, crash.crash_lsn) == (0x1511B00, 0x5BB5F40)
    assert crash.redo_bytes == 74_073_152
    assert crash.phase("wal_replay").seconds == pytest.approx(31.050 - 30.832, abs=1e-6)  # its own: 0.21 s
    assert crash.phase("recovery_checkpoint").seconds == pytest.approx(31.098 - 31.052, abs=1e-6)
    assert crash.recovery_seconds == pytest.approx(31.098 - 30.799, abs=1e-6)
    assert crash.ready_seconds == pytest.approx(31.104 - 30.785, abs=1e-6)
    assert not crash.failed
    assert parsed.to_dict()["episodes"][1]["engine"] == "postgresql"  # valid against the schema


def test_a_postgresql_start_that_failed_says_why_and_redo_not_required_is_nothing_to_replay():
    log = (
        b"2026-11-26 10:00:00.000 UTC [10] LOG:  starting PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64\n"
        b"2026-11-26 10:00:00.010 UTC [11] LOG:  database system was interrupted; last known up at 2026-11-26 09:59:00 UTC\n"
        b"2026-11-26 10:00:00.020 UTC [11] LOG:  redo starts at 0/1000028\n"
        b'2026-11-26 10:00:00.500 UTC [11] PANIC:  could not read file "pg_wal/000000010000000000000001": No such file\n'
        b"2026-11-26 10:00:00.600 UTC [10] LOG:  startup process (PID 11) was terminated by signal 6: Aborted\n"
        b"2026-11-26 10:01:00.000 +01 [20] LOG:  starting PostgreSQL 15.20\n"
        b"2026-11-26 10:01:00.010 +01 [21] LOG:  database system was not properly shut down; automatic recovery in progress\n"
        b"2026-11-26 10:01:00.020 +01 [21] LOG:  redo is not required\n"
        b"2026-11-26 10:01:00.050 +01 [20] LOG:  database system is ready to accept connections\n"
    )
    failed, empty = parse_bytes("postgresql.log", log).crash_episodes
    assert failed.failed and failed.failure.startswith("could not read file") and failed.ready_at is None
    assert empty.redo_bytes == 0 and empty.ready_seconds == pytest.approx(0.05)  # a measured zero
    assert empty.started_at.utcoffset().total_seconds() == 3600


@pytest.mark.parametrize("name", ["server.log", "server.csv", "server.json"])
def test_postgresql_s_csvlog_and_jsonlog_tell_the_same_crash_recovery_as_its_stderr_log(name):
    """One real crash logged in the three formats at once (tests/data/postgresql-15/README.md)."""
    parsed = parse_path(POSTGRESQL_15 / "crash_three_formats" / name)
    assert (parsed.kind, parsed.flavor, parsed.warnings) == ("error_log", "postgresql", [])
    assert [episode.crash_recovery for episode in parsed.episodes] == [False, True]
    crash = parsed.crash_episodes[0]
    assert crash.redo_bytes == 0x80A6980 - 0x52B3BA8 == 48_180_696
    phases = {phase.name: phase.seconds for phase in crash.phases}
    assert (phases["wal_replay"], phases["recovery_checkpoint"], phases["ready_for_connections"]) == (
        0.117,
        0.124,
        0.406,
    )
    # from "was interrupted" to "was not properly shut down": the data directory's fsync
    assert phases["data_directory_sync"] == 0.147
    assert parsed.server_version == "PostgreSQL 15.20"


DEFAULT_VERBOSITY = MYSQL_9_7 / "default_verbosity"


@pytest.mark.parametrize(
    ("method", "crashed", "started", "initialized", "ready"),
    [
        ("sigkill", [False, False, True, False], "03:41:57.098729", (57.342385, 58.438634), 1.527425),
        ("power_loss", [False, True, False], "03:42:10.409327", (10.657151, 11.662612), 1.497200),
    ],
)
def test_mysql_9_7_at_default_verbosity_a_start_with_no_shutdown_since_ready_is_a_crash_restart(
    method, crashed, started, initialized, ready
):
    """The product's own runs at log_error_verbosity 2 (tests/data/mysql-9.7/default_verbosity,
    read by hand): no recovery line at all. The start after a server that was ready and never
    stopped is the crash restart, its recovery bounded by InnoDB's initialization, and said so;
    the server is Oracle's MySQL as Debian packages it, not Percona."""
    parsed = parse_path(DEFAULT_VERBOSITY / method / "error.log")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "9.7.4-2")
    assert [e.crash_recovery for e in parsed.episodes] == crashed
    (crash,) = parsed.crash_episodes
    assert crash.started_at.strftime("%H:%M:%S.%f") == started
    assert crash.recovery_seconds == pytest.approx(initialized[1] - initialized[0], abs=1e-6)
    assert crash.ready_seconds == pytest.approx(ready, abs=1e-3)
    (said,) = [w for w in parsed.warnings if "InnoDB initialization, an upper bound" in w]
    assert "log_error_verbosity 2" in said and "no shutdown logged since the server was last ready" in said
    # the clean start after it took a quarter of the time: the bound holds more than InnoDB's start
    clean = parsed.episodes[-1].phase("innodb_init").seconds
    assert clean < 0.3 < crash.recovery_seconds


def test_a_compose_log_of_several_services_is_read_for_the_database_s_lines():
    """`docker compose logs`: each line prefixed with its service, the web's among the database's
    (one of them says "ready for connections" too)."""
    lines = (DEFAULT_VERBOSITY / "sigkill" / "error.log").read_text().splitlines()
    mixed = []
    for index, line in enumerate(lines):
        mixed.append(f"db-1   | {line}")
        if index % 3 == 0:
            mixed.append(
                f"web-1  | 2026-11-28T03:41:5{index % 10}.000000Z [info] ready for connections: GET /health 200"
            )
    alone, composed = (
        parse_path(DEFAULT_VERBOSITY / "sigkill" / "error.log"),
        parse_bytes("compose.log", "\n".join(mixed).encode()),
    )
    assert [e.crash_recovery for e in composed.episodes] == [e.crash_recovery for e in alone.episodes]
    assert composed.crash_episodes[0].recovery_seconds == alone.crash_episodes[0].recovery_seconds
    assert [e.ready_seconds for e in composed.episodes] == [e.ready_seconds for e in alone.episodes]


def test_a_run_of_mysql_9_7_at_default_verbosity_is_ingested_with_its_bound_said():
    """The run's own bundle, as the dashboard ingests it: a recovery time (the bound), the warning
    that says what it is, and no redo volume claimed."""
    from experiments.ingest.bundle import analyse_run

    folder = DEFAULT_VERBOSITY / "sigkill"
    files = {path.name: path.read_bytes() for path in folder.iterdir() if path.name != "README.md"}
    analysis = analyse_run(json.loads(files["result.json"]), files, "innodb", 512 << 20)
    assert analysis.metrics["recovery_seconds"] == pytest.approx(1.096249, abs=1e-6)
    assert analysis.metrics.get("redo_bytes") is None
    assert any("an upper bound" in warning for warning in analysis.warnings), analysis.warnings


@pytest.mark.parametrize(
    ("version", "flavor"),
    [
        ("9.7.4-2", "mysql"),
        ("8.0.36-2", "mysql"),
        ("8.0.32-25", "percona"),
        ("5.6.31-77.0", "percona"),
        ("5.7.20-19", "percona"),
    ],
)
def test_a_one_digit_revision_from_8_0_on_is_a_distribution_s_not_percona_s(version, flavor):
    """Debian's Oracle MySQL ("9.7.4-2") had been named Percona where its lines did not say
    "(Debian)" (a start line alone, at log_error_verbosity 2)."""
    from experiments.parsers.errorlog import flavor_of

    assert flavor_of(version, "mysqld (mysqld {version}) starting as process 1096") == flavor

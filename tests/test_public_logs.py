"""Parsers on the public samples (tests/data/public, sources in each file's header).

Every expected value was read off the sample by a person; the comment next to it quotes the line.
"""

import io
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from experiments.parsers import SNIFF_LINES, parse_bytes, reduce_error_log

from .samples import sample, samples


def parse(name: str, key: str):
    parsed = parse_bytes(f"{name}:{key}", sample(name, key))
    assert parsed.parser_error is None, parsed.parser_error  # a parser bug is no "partial result"
    return parsed


def only_episode(parsed):
    assert len(parsed.episodes) == 1, parsed.episodes
    return parsed.episodes[0]


# --- MySQL 5.7 ------------------------------------------------------------------------------


def test_mariadb_10_1_crash_known_from_its_xa_recovery_is_that_phase_measured():
    """MariaDB 10.1.5 (sample I, its later start): InnoDB logged nothing, the server's own
    "Starting crash recovery..." / "Crash recovery finished." (tc.log's, or the binary log's)
    says the crash; that phase is what was measured, under a second at whole-second stamps."""
    parsed = parse("mysql55_56_percona_recovery.txt", "I")
    later = parsed.episodes[-1]
    assert later.crash_recovery and later.crash_evidence.startswith("the server's XA crash recovery")
    assert later.phase("binlog_recovery").seconds == 0.0 and later.recovery_seconds is None
    (said,) = [w for w in parsed.warnings if "known from the server's XA crash recovery" in w]
    assert "(binlog_recovery): under a second (whole-second stamps)" in said, said


def test_mysql57_recovery_starts_with_the_scan_logged_before_starting_crash_recovery():
    parsed = parse("mysql57_recovery.txt", "A")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "5.7.19")
    episode = only_episode(parsed)
    assert episode.crash_recovery
    # "Log scan progressed past the checkpoint lsn 33614271533"
    # "Doing recovery: scanned up to log sequence number 33614271542"
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_bytes) == (33614271533, 33614271542, 9)
    # "5 transaction(s) which must be rolled back or cleaned up in total 6 row operations to undo"
    assert (episode.trx_rolled_back, episode.rows_undone) == (5, 6)
    # 14:21:11.005030 scan past the checkpoint -> 14:21:11.897232 "5.7.19 started"
    assert episode.recovery_seconds == pytest.approx(0.892202)
    # 11.772432 "Starting in background the rollback" -> 11.788032 "Rollback of non-prepared ... completed"
    assert episode.rollback_seconds == pytest.approx(0.0156)
    # 10.833430 "starting as process" -> 12.131232 "MySQL: ready for connections."
    assert episode.ready_seconds == pytest.approx(1.297802)


def test_mysql57_mysqld_safe_line_does_not_make_a_start_of_its_own():
    episode = only_episode(parse("mysql57_recovery.txt", "B"))
    assert episode.started_at == datetime(2016, 12, 9, 12, 8, 33, 336610, tzinfo=UTC)
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (2498863, 2498872)
    assert episode.recovery_seconds == pytest.approx(33.641851 - 33.402267)
    assert episode.ready_seconds == pytest.approx(33.784722 - 33.336610)


def test_mysql57_second_start_without_start_line_is_found_and_keeps_its_offset():
    parsed = parse("mysql57_recovery.txt", "D")
    assert [e.crash_recovery for e in parsed.episodes] == [False, True]
    second = parsed.episodes[1]
    # "2021-08-25T15:40:24.547624+08:00 ... Loading buffer pool(s)": the second load is a new start
    assert second.started_at == datetime(2021, 8, 25, 15, 40, 24, 547624, tzinfo=timezone(timedelta(hours=8)))
    # "Recovering after a crash using /var/lib/mysql/mysql-bin" .559363 -> "Crash recovery finished." .559720
    assert second.phase("binlog_recovery").seconds == pytest.approx(0.000357)


def test_mysql57_manual_example_without_timestamps_gives_counts_and_says_durations_are_unknown():
    parsed = parse("mysql57_recovery.txt", "E")
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (369163704, 414724794)
    # "1 transaction(s) which must be rolled back or cleaned up in" / "total 518425 row operations to undo"
    assert (episode.trx_rolled_back, episode.rows_undone) == (1, 518425)
    assert episode.recovery_seconds is None
    assert any("no line carries a timestamp" in w for w in parsed.warnings)


def test_xtrabackup_scan_with_percentages_and_several_batches():
    episode = only_episode(parse("mysql57_recovery.txt", "F"))
    # "Doing recovery: scanned up to log sequence number 8082202749 (100%)"
    assert episode.crash_lsn == 8082202749
    assert (episode.trx_rolled_back, episode.rows_undone) == (1, 5)


# --- MySQL 5.0-5.6, Percona Server 5.5/5.6, MariaDB 5.5/10.0 ----------------------------------


def test_percona55_untimestamped_apply_completion_takes_the_next_stamped_line():
    parsed = parse("mysql55_56_percona_recovery.txt", "A")
    assert (parsed.flavor, parsed.server_version) == ("percona", "5.5.30-rel30.2")
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (2026105126787, 2026235456602)
    # 20:45:27 "Database was not shut down normally!" -> "Apply batch completed" (no stamp; the
    # next stamped line is 20:46:10 "Waiting for the background threads to start")
    assert episode.recovery_seconds == 43.0
    assert episode.phase("redo_apply").seconds == 36.0  # from 20:45:34 "Starting an apply batch"
    assert episode.ready_seconds == 48.0  # 20:46:15 "/usr/sbin/mysqld: ready for connections."


def test_percona_xtradb_cluster_wsrep_ready_line_is_not_a_second_ready():
    parsed = parse("mysql55_56_percona_recovery.txt", "B")
    assert (parsed.flavor, parsed.server_version) == ("percona", "5.5.34-55")
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_bytes) == (1598437, 1598607, 170)
    assert episode.ready_seconds == 1.0  # 17:29:40 -> 17:29:41


def test_mysql56_binlog_recovery_then_a_fatal_error():
    parsed = parse("mysql55_56_percona_recovery.txt", "C")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "5.6.21")
    episode = only_episode(parsed)
    assert episode.crash_recovery and episode.crash_lsn == 554212530  # "5.6.21 started; log sequence number"
    assert episode.phase("binlog_recovery") is not None
    assert episode.ready_at is None
    assert any("Fatal error: Can't open and lock privilege tables" in w for w in parsed.warnings)


def test_mysql55_server_dying_mid_apply_is_a_partial_result_with_a_warning():
    parsed = parse("mysql55_56_percona_recovery.txt", "D")
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (5772634979, 5772636095)
    assert episode.recovery_seconds is None
    assert any("has no end" in w for w in parsed.warnings)


def test_mariadb55_recovery_then_a_restart_by_mysqld_safe():
    parsed = parse("mysql55_56_percona_recovery.txt", "F")
    # "Percona XtraDB ... 5.5.46-MariaDB-37.6 started" is InnoDB's; the Version line is the server's
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "5.5.47-MariaDB")
    assert [e.crash_recovery for e in parsed.episodes] == [True, False]
    first, second = parsed.episodes
    assert first.crash_lsn == 352718445
    assert first.ready_seconds == 1.0  # 2:47:12 -> 2:47:13
    assert second.started_at == datetime(2016, 9, 19, 2, 47, 35, tzinfo=UTC)


def test_xa_prepared_transactions_are_counted_and_the_failed_start_is_reported():
    parsed = parse("mysql55_56_percona_recovery.txt", "G")
    episode = only_episode(parsed)
    # "1 transaction(s) which must be rolled back or cleaned up" / "in total 0 row operations to undo"
    assert (episode.trx_rolled_back, episode.rows_undone) == (1, 0)
    # "[ERROR] Can't init tc log" then "[ERROR] Aborting": the start ends failed, never ready
    assert episode.failed and episode.failure == "Can't init tc log" and episode.ready_at is None
    assert any("failed before it was ready: Can't init tc log" in w for w in parsed.warnings)


def test_docker_timestamps_and_framing_bytes_are_stripped():
    parsed = parse("mysql55_56_percona_recovery.txt", "H")
    assert parsed.server_version == "5.6.32-78.1"
    episode = only_episode(parsed)
    assert episode.started_at == datetime(2016, 10, 13, 18, 57, 46, tzinfo=UTC)
    assert episode.crash_recovery and episode.crash_lsn == 2423494


def test_mysql55_manual_example_split_rollback_count():
    episode = only_episode(parse("mysql55_56_percona_recovery.txt", "J"))
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (452854464, 457028695)
    assert (episode.trx_rolled_back, episode.rows_undone) == (1, 990682)


def test_mysql50_two_word_lsns():
    episode = only_episode(parse("mysql55_56_percona_recovery.txt", "K"))
    # "log sequence number 0 13674004" after "Starting log scan based on checkpoint at"
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (13674004, 20664692)
    assert episode.trx_rolled_back == 1  # "1 uncommitted transaction(s) which must be rolled back"
    scanned = b"InnoDB: Doing recovery: scanned up to log sequence number 125 3934414864\n"
    high_word = parse_bytes("old.log", scanned)
    assert high_word.episodes[0].crash_lsn == (125 << 32) + 3934414864


def test_mysql51_forum_log_recovery_time():
    episode = only_episode(parse("mysql55_56_percona_recovery.txt", "L"))
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (36808, 43655)
    assert episode.recovery_seconds == 1.0  # 1:25:29 log scan -> 1:25:30 "Started; log sequence number"


def test_innodb_plugin_version_is_not_taken_for_the_servers():
    parsed = parse("mysql55_56_percona_recovery.txt", "M")
    assert parsed.server_version is None
    assert only_episode(parsed).crash_recovery  # "Recovering after a crash using .../binlog"


def test_percona56_xa_prepared_recovery_with_apply_batch():
    parsed = parse("mysql55_56_percona_recovery.txt", "N")
    assert (parsed.flavor, parsed.server_version) == ("percona", "5.6.31-77.0")
    episode = only_episode(parsed)
    assert (episode.trx_rolled_back, episode.rows_undone) == (200, 0)
    assert episode.crash_lsn == 3668970401
    # 11:24:47 "Starting an apply batch" -> "Apply batch completed" (next stamp 11:24:54)
    assert episode.phase("redo_apply").seconds == 7.0


# --- MySQL 8.0 / 8.4, Percona Server 8.0 ----------------------------------------------------


def test_percona8_complete_recovery_with_trimmed_time_only_stamps():
    parsed = parse("mysql80_recovery.txt", "A")
    assert (parsed.flavor, parsed.server_version) == ("percona", "8.0.32-25")
    episode = only_episode(parsed)
    # "checkpoint_lsn = 536974192", "scanned up to log sequence number 536978901"
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_bytes) == (536974192, 536978901, 4709)
    assert episode.pages_to_recover == 11  # "Applying a batch of 11 redo log records ...": pages
    # 18.886229 "Database was not shutdown normally!" -> 19.409674 "Apply batch completed!"
    assert episode.recovery_seconds == pytest.approx(0.523445)
    assert episode.ready_seconds == pytest.approx(19.960638 - 18.811222)
    assert any("no date" in w for w in parsed.warnings)


def test_mysql80_apply_batch_with_percentages():
    episode = only_episode(parse("mysql80_recovery.txt", "B"))
    assert (episode.crash_lsn, episode.pages_to_recover) == (57812429, 770)
    assert episode.phase("redo_apply").seconds == pytest.approx(31.368832 - 31.319354)


def test_mysql80_crash_during_apply_is_reported():
    parsed = parse("mysql80_recovery.txt", "C")
    episode = only_episode(parsed)
    # "whereas checkpoint_lsn = 44923494" is the checkpoint; parsing starts a little before it
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (44923494, 44972150)
    assert episode.pages_to_recover == 48
    assert episode.recovery_seconds is None
    assert any("got signal 11" in w for w in parsed.warnings)


def test_mysql8030_redo_files_with_local_offset():
    episode = only_episode(parse("mysql80_recovery.txt", "D"))
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (27517178, 30394287)
    assert episode.started_at.utcoffset() == timedelta(hours=8)


def test_mysql8_default_verbosity_bounds_recovery_by_innodb_initialization():
    parsed = parse("mysql80_recovery.txt", "F")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "8.0.33")
    episode = only_episode(parsed)
    assert episode.crash_recovery  # "InnoDB: Progress in percents: 1 2 ..." rolls back recovered trx
    # 31.660800 "InnoDB initialization has started." -> 33.398409 "... has ended."
    assert episode.recovery_seconds == pytest.approx(1.737609)
    # the X Plugin's "ready for connections" at .930909 is not the server's (.930963)
    assert episode.ready_seconds == pytest.approx(33.930963 - 31.633124)
    assert any("upper bound" in w for w in parsed.warnings)


def test_mysql84_two_start_lines_and_glued_progress_make_one_crash_episode():
    parsed = parse("mysql80_recovery.txt", "G")
    assert parsed.server_version == "8.4.7"
    episode = only_episode(parsed)
    assert episode.crash_recovery
    assert episode.ready_seconds == pytest.approx(29.976208 - 27.457589)


def test_mysql84_entrypoint_lines_do_not_start_the_episode():
    episode = only_episode(parse("mysql80_recovery.txt", "H"))
    # "2024-10-23T17:36:57.830648Z ... MySQL Server - start."
    assert episode.started_at == datetime(2024, 10, 23, 17, 36, 57, 830648, tzinfo=UTC)
    assert not episode.crash_recovery


def test_mysql80_manual_example_wrapped_rollback_count():
    episode = only_episode(parse("mysql80_recovery.txt", "I"))
    assert (episode.crash_lsn, episode.pages_to_recover) == (713458156, 1467)
    assert (episode.trx_rolled_back, episode.rows_undone) == (1, 561887)


@pytest.mark.parametrize("key", ["K", "L"])
def test_mysql80_clean_start_with_a_batch_of_zero_records_is_not_a_recovery(key):
    episode = only_episode(parse("mysql80_recovery.txt", key))
    assert not episode.crash_recovery
    assert episode.pages_to_recover is None


def test_mysql80_prefix_stripped_lines_are_still_an_error_log():
    parsed = parse("mysql80_recovery.txt", "E")
    assert (parsed.kind, parsed.server_version) == ("error_log", "8.0.18")
    assert only_episode(parsed).crash_recovery  # "Rolling back trx with id 46339, 3 rows to undo"


# --- MariaDB 10.x / 11.x --------------------------------------------------------------------


def test_mariadb106_long_read_behind_a_rancher_prefix():
    episode = only_episode(parse("mariadb10_11_recovery.txt", "A"))
    # "checkpoint LSN=30180897804,30180897804"; last "Read redo log up to LSN=30208442368"
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (30180897804, 30208442368)
    assert episode.pages_to_recover == 7635  # "Starting final batch to recover 7635 pages"
    assert episode.phase("redo_scan").seconds == 53.0  # 3:55:27 -> 3:56:20
    # 3:56:20 -> 3:57:17, the line after the last "To recover"
    assert episode.phase("redo_apply").seconds == 57.0
    assert episode.recovery_seconds == 110.0


def test_mariadb1011_crash_then_clean_start():
    parsed = parse("mariadb10_11_recovery.txt", "B")
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "10.11.3-MariaDB-1:10.11.3+maria~ubu2204")
    assert [e.crash_recovery for e in parsed.episodes] == [True, False]
    crash = parsed.episodes[0]
    # "checkpoint LSN=46590" ... "log sequence number 54202; transaction id 30"
    assert (crash.checkpoint_lsn, crash.crash_lsn, crash.pages_to_recover) == (46590, 54202, 15)


def test_mariadb106_complete():
    parsed = parse("mariadb10_11_recovery.txt", "C")
    assert parsed.server_version == "10.6.12-MariaDB"
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.pages_to_recover) == (42132, 825790, 87)
    assert (episode.recovery_seconds, episode.ready_seconds) == (1.0, 1.0)


def test_mariadb107_innodb_version_alone_says_mariadb():
    parsed = parse("mariadb10_11_recovery.txt", "D")
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "10.7.3")  # "InnoDB: 10.7.3 started"
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.pages_to_recover) == (45299586, 45301200, 3)


def test_mariadb102_reports_innodb_57_but_is_mariadb():
    parsed = parse("mariadb10_11_recovery.txt", "G")
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "10.2.12-MariaDB-10.2.12+maria~jessie")
    episode = only_episode(parsed)
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (1619742, 1619751)
    assert episode.ready_seconds == 1.0  # the WSREP "Synchronized with group, ready" line is not it


def test_mariadb_init_failure_is_a_warning_and_a_partial_result():
    parsed = parse("mariadb10_11_recovery.txt", "G2")
    assert only_episode(parsed).checkpoint_lsn == 129135088
    assert any("Plugin 'InnoDB' init function returned error" in w for w in parsed.warnings)


def test_glued_lines_split_at_the_next_timestamp():
    episode = only_episode(parse("mariadb10_11_recovery.txt", "I"))
    assert episode.checkpoint_lsn == 300288  # "LSN=3002882024-10-15 10:28:59 ..."


def test_log_shipper_prefix_gives_way_to_the_servers_stamp():
    episode = only_episode(parse("mariadb10_11_recovery.txt", "J"))
    assert episode.started_at == datetime(2017, 2, 2, 20, 27, 5, tzinfo=UTC)


def test_mariadb104_mysqld_safe_and_aria_lines_make_one_start():
    episode = only_episode(parse("mariadb10_11_recovery.txt", "E"))
    assert not episode.crash_recovery


# --- TokuDB and MyRocks ---------------------------------------------------------------------


def test_tokuft_recovery_with_ctime_stamps():
    episode = only_episode(parse("tokudb_recovery.txt", "A"))
    assert (episode.crash_recovery, episode.engine) == (True, "tokudb")
    # "scanning backward from 3485", "turning around at begin checkpoint 3467", "left 18"
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_records_applied) == (3467, 3485, 18)
    assert episode.redo_bytes is None  # TokuFT LSNs count log entries
    assert episode.recovery_seconds == 1.0  # 00:27:28 "recovery starting" -> 00:27:29 "recovery done"


def test_tokuft_recovery_in_a_server_log_is_read_in_the_servers_zone():
    log = (
        b"2016-01-28 00:27:27 140 [Note] /usr/sbin/mysqld (mysqld 5.6.28-76.1) starting as process 140 ...\n"
        b"Thu Jan 28 00:27:28 2016 TokuFT recovery starting in env /var/lib/mysql\n"
        b"Thu Jan 28 00:27:31 2016 TokuFT recovery done\n"
        b"2016-01-28 00:27:32 140 [Note] /usr/sbin/mysqld: ready for connections.\n"
    )
    paris = timezone(timedelta(hours=1))
    episode = only_episode(parse_bytes("toku.err", log, local_tz=paris))
    assert episode.started_at == datetime(2016, 1, 27, 23, 27, 27, tzinfo=UTC)
    assert (episode.recovery_seconds, episode.ready_seconds) == (3.0, 5.0)


def test_myrocks_plugin_failure_and_syslog_prefix():
    failed = parse("myrocks_recovery.txt", "A")
    assert any("Plugin 'ROCKSDB' init function returned error" in w for w in failed.warnings)
    syslog = parse("myrocks_recovery.txt", "E")
    # a running server's lines and its crash: no start of it is in the excerpt
    assert syslog.episodes == []
    # "Mar 15 12:45:04 mow01-s057721 mysqld: 190315 12:45:04 [ERROR] mysqld got signal 6 ;"
    assert "the server stopped at 2019-03-15 12:45:04+00:00: got signal 6 ;" in syslog.warnings


def test_percona8_myrocks_x_plugin_ready_is_not_the_server():
    parsed = parse("myrocks_recovery.txt", "F")
    assert (parsed.flavor, parsed.server_version) == ("percona", "8.0.26-17")
    assert only_episode(parsed).ready_at is None


# --- SHOW ENGINE INNODB STATUS, sysbench ---------------------------------------------------


@pytest.mark.parametrize(
    ("key", "lsn", "checkpoint_lsn", "checkpoint_age"),
    [
        ("1", 1122294428, 1122285403, 1122294428 - 1122285403),  # 5.5, indented
        ("2", 549033793, 549033793, 0),  # 5.5
        ("3", 6498236107, 6498236107, 0),  # 5.6
        ("5", 106246324645, 106234556811, 11767834),  # Percona 5.6: "Checkpoint age        11767834"
        ("6", 338086806104, 337892779162, 338086806104 - 337892779162),  # 5.7
        ("8a", 49430562, 49430562, 0),  # 8.0.30+
        ("8c", 31820389, 31820389, 0),  # 8.0.30+ with the monitor header
        ("9", 140035044, 136284551, 140035044 - 136284551),  # 8.x with "Log capacity"
        ("10", 608039671, 591179191, 16860480),  # Percona 8.0: "Checkpoint age        16860480"
    ],
)
def test_innodb_status_log_section_of_every_version(key, lsn, checkpoint_lsn, checkpoint_age):
    parsed = parse("innodb_status_log_sections.txt", key)
    assert parsed.kind == "innodb_status"
    assert (parsed.log.lsn, parsed.log.checkpoint_lsn, parsed.log.checkpoint_age) == (
        lsn,
        checkpoint_lsn,
        checkpoint_age,
    )


def test_innodb_status_capacity_and_two_word_lsn():
    assert parse("innodb_status_log_sections.txt", "9").log.log_capacity == 104857600
    old = parse_bytes("status.txt", b"---\nLOG\n---\nLog sequence number 125 3934414864\n")
    assert old.log.lsn == (125 << 32) + 3934414864


def test_sysbench_reports_current_interrupted_and_legacy():
    complete = parse("sysbench_report.txt", "A").sysbench
    assert (complete.transactions, complete.tps, complete.qps) == (31188, 519.64, 10392.81)
    assert complete.latency_ms["p95"] == 57.87
    interrupted = parse("sysbench_report.txt", "C")
    assert len(interrupted.sysbench.intervals) == 6
    interval_tps = (9.40, 9.90, 10.10, 10.50, 10.20, 9.80)
    assert interrupted.sysbench.tps == pytest.approx(sum(interval_tps) / 6, abs=0.01)
    legacy = parse("sysbench_report.txt", "G")
    assert (legacy.sysbench.transactions, legacy.sysbench.latency_ms["p95"]) == (1042827, 22.29)
    assert any("0.4/0.5" in w for w in legacy.warnings)
    truncated = parse("sysbench_report.txt", "F")
    assert any("no sysbench totals" in w for w in truncated.warnings)


# --- docker compose: the database's lines among other services' (compose_logs.txt) --------


COMPOSE = "compose_logs.txt"


def _service_lines(key: str, prefix: str) -> list[str]:
    return [line for line in sample(COMPOSE, key).decode().splitlines() if line.startswith(prefix)]


def test_mysql_8_0_37_compose_up_with_redis_and_an_app_is_read_for_mysqld_s_start():
    parsed = parse(COMPOSE, "A")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "8.0.37")
    episode = only_episode(parsed)  # Redis's "Ready to accept connections" and the app's lines open none
    # 15:00:02.952129 "(mysqld 8.0.37) starting as process 1" -> 03.750916 "[MY-010931] ... ready"
    assert episode.started_at == datetime(2024, 7, 1, 15, 0, 2, 952129, tzinfo=UTC)
    assert episode.ready_seconds == pytest.approx(0.798787)
    # 8.0.20+ prints "Starting XA crash recovery..." at every start: no crash
    assert not episode.crash_recovery and episode.recovery_seconds is None


def test_mysql_8_0_37_compose_logs_with_flask_and_nginx_is_read_for_mysqld_s_start():
    parsed = parse(COMPOSE, "B")
    episode = only_episode(parsed)
    # 05:56:33.875903 "starting as process 1" -> 34.994198 "ready for connections" (not nginx's
    # "ready for start up", nor the X Plugin's at .993927)
    assert episode.started_at == datetime(2024, 6, 7, 5, 56, 33, 875903, tzinfo=UTC)
    assert episode.ready_seconds == pytest.approx(1.118295)
    assert not episode.crash_recovery


def test_compose_logs_printing_the_other_services_first_still_read_mysqld():
    """`docker compose logs` prints one service's lines after another's: the app's and Redis's
    whole logs (here longer than the sniffed head) come before mysqld's: they had made the file
    an unknown format."""
    others = [
        line for line in sample(COMPOSE, "A").decode().splitlines() if not line.startswith("mysql-db_1")
    ]
    mysqld = _service_lines("A", "mysql-db_1")
    day_of_others = (others * (SNIFF_LINES // len(others) + 2))[: SNIFF_LINES + 100]
    content = ("\n".join(day_of_others + mysqld) + "\n").encode()
    parsed = parse_bytes("compose.log", content)
    assert parsed.kind == "error_log", parsed.warnings
    assert [e.to_dict() for e in parsed.episodes] == [e.to_dict() for e in parse(COMPOSE, "A").episodes]
    # an import keeps the lines the parser reads: they read the same
    kept = parse_bytes("compose.log", reduce_error_log(io.BytesIO(content)))
    assert kept.to_dict()["episodes"] == parsed.to_dict()["episodes"]


def test_mariadb_10_1_implicit_recovery_through_the_lsn_mismatch_and_tc_log_is_timed():
    parsed = parse(COMPOSE, "C")
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "10.1.45-MariaDB-1~bionic")
    episode = only_episode(parsed)  # the app's "Mariadb is up" and its other lines open none
    assert episode.crash_recovery and episode.engine == "innodb"
    # "The log sequence number 1616727 in ibdata file do not match the log sequence number
    # 10825026 in the ib_logfiles!", "... 5.6.47-87.0 started; log sequence number 10825026"
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_bytes) == (10825026, 10825026, 0)
    # InnoDB recovers from the mismatch (12:23:47, the doublewrite buffer restored) to "started"
    # (12:23:47): under a second at whole-second stamps, a measured zero, not an unknown
    assert episode.recovery_seconds == 0.0
    # "Recovering after a crash using tc.log" 12:23:48 -> "Crash recovery finished." 12:23:48
    assert episode.phase("binlog_recovery").seconds == 0.0
    # "mysqld (mysqld 10.1.45-MariaDB-1~bionic) starting as process 1" 12:23:47 -> ready 12:23:48
    assert episode.ready_seconds == 1.0
    assert not [w for w in parsed.warnings if "logged no recovery of its own" in w]


def _mariadb_10_1_log(stamp: str) -> bytes:
    """Sample C's server lines alone, as its error log has them, restamped so each step takes
    time: InnoDB recovers 3 s after the mismatch, tc.log's recovery 2 s after that."""
    offset = 0
    out = []
    for line in _service_lines("C", "db_1  | "):
        text = line.split("| ", 1)[1]
        if "[Entrypoint]" in text:
            continue  # the image's script, not the server's log
        if "started; log sequence number" in text:
            offset = 3
        elif "Recovering after a crash using tc.log" in text:
            offset = 4
        elif "Crash recovery finished." in text:
            offset = 6
        message = re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+ (.*)", text)
        out.append(stamp.format(second=47 + offset) + message.group(1) if message else text)
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize(
    "stamp",
    [
        "2020-07-21 12:23:{second} 140235146762240 ",  # MariaDB 10.1's own, and MySQL 5.6's
        "200721 12:23:{second} ",  # 10.0's and 5.5's YYMMDD
    ],
)
def test_mariadb_10_1_style_log_times_the_innodb_and_tc_log_recoveries(stamp):
    parsed = parse_bytes("mariadb-10.1.err", _mariadb_10_1_log(stamp))
    episode = only_episode(parsed)
    assert episode.crash_recovery and episode.started_at == datetime(2020, 7, 21, 12, 23, 47, tzinfo=UTC)
    # the mismatch at :47 -> "Percona XtraDB ... started" at :50
    assert episode.recovery_seconds == 3.0
    # "Recovering after a crash using tc.log" at :51 -> "Crash recovery finished." at :53
    assert episode.phase("binlog_recovery").seconds == 2.0
    assert episode.ready_seconds == 6.0  # "starting as process 1" :47 -> "ready for connections." :53


# The other services of a compose file, in their own words (samples A and B), to interleave.
_OTHER_SERVICES = {
    "redis": [line.split("| ", 1)[1] for line in _service_lines("A", "redis-db_1")],
    "app": [line.split("| ", 1)[1] for line in _service_lines("A", "go-flarum_1 ")],
    "web": [line.split("| ", 1)[1] for line in _service_lines("B", "file-server ")],
}


def _as_compose(log: bytes, v1: bool, others_first: bool = False) -> bytes:
    """The log as mysqld's service in `docker compose up` output (`v1`: docker-compose 1.x's
    "project_db_1  | ", else 2.x's "db-1  | "), another service's line after each of mysqld's; or
    as `docker compose logs` prints them, every other service's whole log (past the sniffed
    head) before mysqld's."""

    def named(service: str) -> str:
        return f"lab_{service}_1" if v1 else f"{service}-1"

    width = max(len(named(s)) for s in ("db", *_OTHER_SERVICES)) + 2
    theirs = [
        f"{named(service):<{width}}| {said}"
        for n in range(SNIFF_LINES)
        for service, lines in _OTHER_SERVICES.items()
        if (said := lines[n % len(lines)])
    ]
    ours = [f"{named('db'):<{width}}| {line}".rstrip() for line in log.decode().splitlines()]
    if others_first:
        return ("\n".join(theirs + ours) + "\n").encode()
    mixed = [line for pair in zip(ours, theirs, strict=False) for line in pair]
    return ("\n".join(mixed) + "\n").encode()


def _restarted_after_a_kill(key: str, after_seconds: int) -> bytes:
    """Sample `key`'s mysqld lines, then the same start again `after_seconds` later, as compose
    restarts a container that was killed (no shutdown logged between)."""
    lines = [line.split("| ", 1)[1] for line in _service_lines(key, "mysql-db_1")]

    def later(match: re.Match) -> str:
        moment = datetime.fromisoformat(match.group(0).replace("Z", "+00:00"))
        return (moment + timedelta(seconds=after_seconds)).isoformat(timespec="microseconds")

    stamp = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
    again = [stamp.sub(later, line) for line in lines]
    return ("\n".join(lines + again) + "\n").encode()


MYSQL_80_CRASH_LOGS = {
    # MySQL 8.0.17: "[MY-010229] [Server] Starting crash recovery..." after the kill
    "8.0.17": sample("production_logs.txt", "B"),
    # MySQL 8.0.33 at default verbosity: the rollback's "InnoDB: Progress in percents:"
    "8.0.33": sample("mysql80_recovery.txt", "F"),
    # MySQL 8.0.37 (sample A) killed and restarted: the start after one ready and never stopped
    "8.0.37": _restarted_after_a_kill("A", 600),
}


@pytest.mark.parametrize("others_first", [False, True], ids=["interleaved", "others-first"])
@pytest.mark.parametrize("v1", [True, False], ids=["v1", "v2"])
@pytest.mark.parametrize("version", sorted(MYSQL_80_CRASH_LOGS))
def test_mysql_8_0_crash_in_compose_output_reads_as_the_plain_log(version, v1, others_first):
    plain = parse_bytes("error.log", MYSQL_80_CRASH_LOGS[version])
    composed = parse_bytes("compose.log", _as_compose(MYSQL_80_CRASH_LOGS[version], v1, others_first))
    assert composed.kind == "error_log", composed.warnings
    assert composed.server_version == version
    (crash,) = composed.crash_episodes
    assert crash.ready_at is not None
    assert crash.recovery_seconds == plain.crash_episodes[0].recovery_seconds
    assert [e.to_dict() for e in composed.episodes] == [e.to_dict() for e in plain.episodes]
    assert composed.warnings == plain.warnings


def test_mysql_8_0_37_crash_restart_in_compose_output_is_timed():
    composed = parse_bytes("compose.log", _as_compose(MYSQL_80_CRASH_LOGS["8.0.37"], v1=False))
    clean, restarted = composed.episodes
    assert not clean.crash_recovery and restarted.crash_recovery
    # 15:10:02.958017 "InnoDB initialization has started." -> 03.337360 "... has ended.": the bound
    assert restarted.recovery_seconds == pytest.approx(0.379343)
    assert restarted.ready_seconds == pytest.approx(0.798787)


def test_a_postgresql_service_in_the_same_stream_does_not_make_it_a_postgresql_log():
    postgres = Path(__file__).parent / "data" / "postgresql-15" / "crash_after_pgbench" / "server.log"
    theirs = [f"postgres-1  | {line}" for line in postgres.read_text().splitlines()[:20]]
    ours = [f"db-1        | {line}" for line in MYSQL_80_CRASH_LOGS["8.0.17"].decode().splitlines()]
    parsed = parse_bytes("compose.log", ("\n".join(theirs + ours) + "\n").encode())
    assert parsed.kind == "error_log" and parsed.server_version == "8.0.17"
    assert [e.crash_recovery for e in parsed.episodes] == [False, True]


# --- the fast path is the same parser ------------------------------------------------------


ERROR_LOG_SAMPLES = [
    (name, key)
    for name in (
        "mysql55_56_percona_recovery.txt",
        "mysql57_recovery.txt",
        "mysql80_recovery.txt",
        "mariadb10_11_recovery.txt",
        "myrocks_recovery.txt",
        "tokudb_recovery.txt",
        "compose_logs.txt",
    )
    for key in samples(name)
]


@pytest.mark.parametrize(("name", "key"), ERROR_LOG_SAMPLES)
def test_keyword_scan_gives_the_same_result_as_reading_every_line(name, key):
    content = sample(name, key)
    assert parse_bytes(key, content).to_dict() == parse_bytes(key, content, scan=False).to_dict()


def test_innodb_status_in_tabular_form():
    # `mysql -e "SHOW ENGINE INNODB STATUS"` without \G: one cell, line ends escaped as "\n"
    row = (
        "Type\tName\tStatus\n"
        "InnoDB\t\t\\n=====================================\\n2024-01-03 14:51:21 INNODB MONITOR OUTPUT"
        "\\n---\\nLOG\\n---\\nLog sequence number          31886062\\nLog flushed up to            31886062"
        "\\nPages flushed up to          31878294\\nLast checkpoint at           31878294"
        "\\n----------------------\\nBUFFER POOL AND MEMORY\\n"
    )
    parsed = parse_bytes("status.tsv", row.encode())
    assert (parsed.kind, parsed.log.lsn, parsed.log.checkpoint_lsn) == ("innodb_status", 31886062, 31878294)

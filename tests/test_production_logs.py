"""Logs as production writes them (tests/data/public/production_logs.txt, sources in its header).

Crash evidence at default verbosity, and episodes counted one per server start. Every expected
value was read off the sample by a person; the comment next to it quotes the line.
"""

from datetime import UTC, datetime

import pytest

from experiments.parsers import parse_bytes

from .samples import sample, samples

LOGS = "production_logs.txt"


def parse(key: str):
    parsed = parse_bytes(f"{LOGS}:{key}", sample(LOGS, key))
    assert parsed.parser_error is None, parsed.parser_error
    return parsed


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- 1. Crash evidence beyond InnoDB's own notes ---------------------------------------------


def test_mysql80_default_verbosity_crash_is_known_from_the_servers_crash_recovery():
    parsed = parse("A")
    assert (parsed.flavor, parsed.server_version) == ("mysql", "8.0.17")
    recovered, failed = parsed.episodes
    # "[MY-010229] [Server] Starting crash recovery..." (printed only when the binary log needs it)
    assert recovered.crash_recovery and recovered.engine == "innodb"
    # 10:15:14.448256 "Starting crash recovery..." -> 14.475411 "Crash recovery finished."
    assert recovered.phase("binlog_recovery").seconds == pytest.approx(0.027155)
    # 10:15:12.569342 "starting as process 19493" -> 15.677386 "[MY-010931] ... ready for connections"
    assert recovered.ready_seconds == pytest.approx(3.108044)
    # InnoDB wrote nothing: no recovery time, no redo volume; a warning says so, with its bound
    assert (recovered.recovery_seconds, recovered.redo_bytes, recovered.checkpoint_lsn) == (None, None, None)
    (said,) = [w for w in parsed.warnings if "known from the server's XA crash recovery" in w]
    assert "redo replay and redo volume are unknown" in said
    assert "what was measured is the server's own XA recovery (binlog_recovery): 0.027 s" in said
    assert "InnoDB had finished by 2020-05-27T10:15:14.448256+00:00, 1.879 s after the start" in said
    assert not failed.crash_recovery


def test_mysql80_xa_crash_recovery_at_every_start_is_no_crash():
    # MySQL 8.0.20+ prints "[MY-010229] [Server] Starting XA crash recovery..." at every start
    clean = (
        b"2025-10-09T12:37:00.764140Z 0 [System] [MY-010229] [Server] Starting XA crash recovery...\n"
        b"2025-10-09T12:37:00.775162Z 0 [System] [MY-010232] [Server] XA crash recovery finished.\n"
    )
    parsed = parse_bytes("pxc.log", clean)
    assert [e.crash_recovery for e in parsed.episodes] == [False]


def test_mariadb_crash_known_from_tc_log_only():
    parsed = parse("C")
    assert (parsed.flavor, parsed.server_version) == ("mariadb", "11.2.3-MariaDB")
    (episode,) = parsed.episodes
    # "Recovering after a crash using tc.log"; InnoDB: "End of log at LSN=61545", no "Starting
    # crash recovery": the redo log had nothing to replay
    assert episode.crash_recovery and episode.recovery_seconds is None
    assert episode.started_at == at("2024-03-12T07:02:47")
    assert episode.ready_seconds == 0.0  # every line of the start is stamped 7:02:47
    assert any("known from tc.log's crash recovery" in w for w in parsed.warnings)


def test_mariadb_tc_log_recovery_alongside_redo_recovery_in_journalctl_output():
    parsed = parse("G")
    (episode,) = parsed.episodes  # process 49627's shutdown tail opens no start
    # "Starting crash recovery from checkpoint LSN=45759", "End of log at LSN=46100", "To recover: 16 pages"
    assert (episode.checkpoint_lsn, episode.crash_lsn, episode.redo_bytes) == (45759, 46100, 341)
    assert episode.pages_to_recover == 16
    assert episode.recovery_seconds == 0.0 and episode.ready_seconds == 1.0  # 18:52:18 -> 18:52:19
    assert episode.phase("binlog_recovery").seconds == 0.0
    assert episode.started_at == at("2026-02-07T18:52:18")
    assert not [w for w in parsed.warnings if "logged no recovery" in w]


def test_mysql57_lsn_mismatch_marks_a_recovery_that_logged_no_redo_lines():
    parsed = parse("D")
    (episode,) = parsed.episodes
    # "The log sequence number 20792063 in the system tablespace does not match the log sequence
    # number 20801136 in the ib_logfiles!": the second number is the checkpoint
    assert episode.crash_recovery and episode.checkpoint_lsn == 20801136
    # "5.7.37 started; log sequence number 20801136": nothing past the checkpoint to replay
    assert (episode.crash_lsn, episode.redo_bytes) == (20801136, 0)
    # 08:08:25.256725 "Database was not shutdown normally!" -> .426965 "5.7.37 started"
    assert episode.recovery_seconds == pytest.approx(0.17024)
    # .231436 "starting as process 9580" -> .456977 "ready for connections."
    assert episode.ready_seconds == pytest.approx(0.225541)
    (said,) = [w for w in parsed.warnings if "LSN mismatch alone" in w]
    assert "the pages and records applied are unknown" in said


# --- 2. One episode per server start ---------------------------------------------------------


def test_shutdown_tail_of_an_earlier_process_opens_no_episode():
    parsed = parse("F")
    (episode,) = parsed.episodes
    # "Starting MariaDB 10.5.27-MariaDB ... as process 2408", not the "Normal shutdown" before it
    assert episode.started_at == at("2026-02-23T16:19:21")
    assert parsed.server_version == "10.5.27-MariaDB"
    # "[ERROR] Can't start server: can't create PID file: Permission denied"
    assert episode.failed
    assert episode.failure == "Can't start server: can't create PID file: Permission denied"
    assert episode.ready_at is None and not episode.crash_recovery


def test_a_line_of_an_earlier_process_and_a_start_that_never_got_ready():
    parsed = parse("B")
    killed, recovered = parsed.episodes  # not the "Server upgrade ... started." of a process before
    # "starting as process 18797", then nothing of it: no ready, no failure line either
    assert killed.started_at == at("2019-08-14T08:03:03.255475")
    assert (killed.ready_at, killed.failed, killed.crash_recovery) == (None, False, False)
    # "starting as process 18880" 08:04:31.646815 -> 33.380645 "ready for connections"
    assert recovered.started_at == at("2019-08-14T08:04:31.646815")
    assert recovered.crash_recovery and recovered.ready_seconds == pytest.approx(1.73383)
    assert recovered.phase("binlog_recovery").seconds == pytest.approx(0.03501)


def test_tail_pasted_twice_counts_once():
    once, twice = parse("G"), parse("H")
    assert len(twice.episodes) == 1
    assert twice.episodes[0].to_dict() == once.episodes[0].to_dict()
    assert any("in the log twice" in w for w in twice.warnings)
    assert not any("runs backwards" in w for w in twice.warnings)


def test_the_same_start_pasted_twice_in_full_counts_once():
    content = sample(LOGS, "D") + sample(LOGS, "D")
    parsed = parse_bytes("twice.log", content)
    assert len(parsed.episodes) == 1 and parsed.episodes[0].recovery_seconds == pytest.approx(0.17024)


def test_ready_line_cut_after_its_error_code_still_marks_ready():
    cut = parse("I").episodes[1]
    # "2019-08-14T08:04:33.380645Z 0 [System] [MY-010931]" and nothing after it
    assert cut.ready_at == at("2019-08-14T08:04:33.380645")
    assert cut.to_dict() == parse("B").episodes[1].to_dict()


def test_crash_during_recovery_ends_the_episode_failed_never_ready():
    parsed = parse("E")
    (episode,) = parsed.episodes
    # "Log scan progressed past the checkpoint lsn 19949026883", "scanned up to ... 19949026939"
    assert (episode.checkpoint_lsn, episode.crash_lsn) == (19949026883, 19949026939)
    assert episode.crash_recovery and episode.failed and episode.ready_at is None
    assert episode.failure == "Assertion failure in thread 139759255815936 in file fut0lst.ic line 93"
    assert episode.recovery_seconds is None  # it never finished
    # the assertion is stamped 15:44:50 local time in a UTC log: no break, no second start
    assert not any("jumps" in w for w in parsed.warnings)
    assert any("failed before it was ready" in w and "did not finish" in w for w in parsed.warnings)


def test_signal_during_redo_apply_leaves_the_recovery_without_an_end():
    parsed = parse_bytes("shannon", sample("mysql80_recovery.txt", "C"))
    (episode,) = parsed.episodes
    # "Applying a batch of 48 redo log records", "100%", then "mysqld got signal 11 ;"
    assert episode.failed and episode.failure.startswith("got signal 11")
    assert episode.phase("redo_apply").end is None and episode.recovery_seconds is None


def test_tc_log_recovery_that_fails():
    parsed = parse("J")
    (episode,) = parsed.episodes
    # "[ERROR] Recovery failed! You must enable all engines that were enabled at the moment of the crash"
    assert episode.crash_recovery and episode.failed
    assert episode.failure.startswith("Recovery failed! You must enable all engines")


def test_docker_compose_reads_the_database_container_apart_from_the_app():
    parsed = parse("C")
    assert len(parsed.episodes) == 1  # the app container's lines open none
    # The compose output as it comes when the app logs first (the same lines, interleaved): the
    # app's 07:02:49 lines between the database's 7:02:47 ones break nothing.
    lines = sample(LOGS, "C").decode().splitlines()
    app = [line for line in lines if line.startswith("taskscheduler_app")]
    db = [line for line in lines if not line.startswith("taskscheduler_app")]
    recovering = next(n for n, line in enumerate(db) if "Recovering after a crash" in line)
    interleaved = db[:recovering] + app + db[recovering:]
    mixed = parse_bytes("mixed.log", ("\n".join(interleaved) + "\n").encode())
    assert [e.to_dict() for e in mixed.episodes] == [e.to_dict() for e in parsed.episodes]
    assert not any("backwards" in w for w in mixed.warnings)


@pytest.mark.parametrize("key", sorted(samples(LOGS)))
def test_keyword_scan_reads_production_logs_as_a_full_read_does(key):
    content = sample(LOGS, key)
    assert parse_bytes(key, content).to_dict() == parse_bytes(key, content, scan=False).to_dict()

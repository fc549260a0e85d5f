"""Issue 42, item 6: a finding about a parameter says which phase carried the difference, and
whether the parameter's own phase (binlog / XA recovery for binlog files) moved with it."""

import re

import pytest

from experiments.analysis.cells import ROW_FIELDS
from experiments.models import Run
from experiments.reports.answers import startup_answers
from experiments.reports.findings import parameter_findings

from .factories import ExperimentFactory
from .test_analysis import done_run, noisy

pytestmark = pytest.mark.django_db


def test_the_binlog_finding_compares_the_restart_not_crash_recovery_and_says_its_own_phase():
    """The issue's case (42, then 53): 200 binlog files against 1, crash recovery 1.4x faster
    because InnoDB's redo apply moved, the binlog / XA phase under 5 ms in both. Binary log files
    act after crash recovery: they are compared on the downtime, and the finding says plainly that
    their number did not change the restart."""
    experiment = ExperimentFactory()
    for files, typical in ((1, 0.30), (200, 0.21)):
        for n, factor in enumerate(noisy(files, 4, 1.0)):
            parameters = {
                "buffer_pool_size": "128M",
                "redo_log_size": "64M",
                "insert_rate": 0,
                "binlog_files": files,
            }
            done_run(
                experiment,
                parameters=parameters,
                recovery_seconds=typical * factor,
                downtime_seconds=(typical + 0.9) * factor,
                phases={"redo_scan": 0.02, "redo_apply": (typical - 0.02) * factor, "binlog_recovery": 0.004},
                repetition=n + 1,
            )
    rows = list(Run.objects.values(*ROW_FIELDS))
    assert parameter_findings(rows, ["binlog_files"]) == []  # not on crash recovery, which they do not touch
    (finding,) = startup_answers(rows, ["binlog_files"])
    assert "the number of binary log files (1 to 200) did not change the restart beyond the noise" in finding
    assert re.search(r"downtime 1\.2\d s at 1, 1\.1\d s at 200 \(medians; 200 against 1: 0\.9\dx", finding), (
        finding
    )
    assert "binlog / XA recovery 0.004 s at 1, 0.004 s at 200 (medians)" in finding


def test_builds_are_each_set_against_the_system_s_named_with_their_server_and_their_redo_said():
    """Three builds: each against the system's build, named with the server its runs said they
    were; where one side replayed more redo for the same workload, the finding says so."""
    experiment = ExperimentFactory()
    servers = {
        "system": ("10.11.19-MariaDB-0+deb12u1", 0.08, 9.5),
        "mariadb-11.8": ("11.8.9-MariaDB-0+deb13u1", 0.08, 10.0),
        "mysql-9.7": ("9.7.4-2", 0.60, 20.6),
    }
    for build, (version, typical, redo_mib) in servers.items():
        for n, factor in enumerate(noisy(len(build), 4, 1.0)):
            done_run(
                experiment,
                parameters={"buffer_pool_size": "128M", "redo_log_size": "512M", "server_build": build},
                recovery_seconds=typical * factor,
                redo_bytes=int(redo_mib * factor * 2**20),
                server_version=version,
                repetition=n + 1,
            )
    rows = list(Run.objects.values(*ROW_FIELDS))
    found = parameter_findings(rows, ["server_build"])
    assert len(found) == 2 and all("build system (MariaDB 10.11.19)" in finding for finding in found)
    (mysql,) = [finding for finding in found if "build mysql-9.7 (MySQL 9.7.4)" in finding]
    assert re.search(r"crash recovery [67]\.\dx slower than build system \(MariaDB 10\.11\.19\)", mysql)
    assert "the redo replayed differed too: build mysql-9.7 (MySQL 9.7.4) 2" in mysql, mysql
    (mariadb,) = [finding for finding in found if "build mariadb-11.8 (MariaDB 11.8.9)" in finding]
    assert "redo replayed differed" not in mariadb, mariadb  # 10.0 against 9.5 MiB: not worth saying

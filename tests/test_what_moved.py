"""Issue 42, item 6: a finding about a parameter says which phase carried the difference, and
whether the parameter's own phase (binlog / XA recovery for binlog files) moved with it."""

import pytest

from experiments.analysis.cells import ROW_FIELDS
from experiments.models import Run
from experiments.reports.findings import parameter_findings

from .factories import ExperimentFactory
from .test_analysis import done_run, noisy

pytestmark = pytest.mark.django_db


def test_the_binlog_finding_names_the_phase_that_moved_and_says_its_own_did_not():
    """The issue's case: 200 binlog files against 1, crash recovery 1.4x faster; the binlog / XA
    phase stayed under 5 ms in both, only InnoDB's redo apply moved."""
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
                phases={"redo_scan": 0.02, "redo_apply": (typical - 0.02) * factor, "binlog_recovery": 0.004},
                repetition=n + 1,
            )
    rows = list(Run.objects.values(*ROW_FIELDS))
    (finding,) = parameter_findings(rows, ["binlog_files"])
    assert "binlogs 200: crash recovery 1.4x faster than binlogs 1" in finding
    assert "; the phase that moved: redo apply (0.290 s to 0.189 s, medians)" in finding
    assert (
        "this parameter's own phase did not carry it (binlog / XA recovery 0.004 s to 0.004 s, medians)"
        in finding
    )

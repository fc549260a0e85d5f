"""Issue 43: a host's A/A spread is read from the database in one query per view instead of from
every run of its history, and is never stale: after each event that changes what it stands on (a
new experiment of a definition, a run excluded, the same run included again, an A/A check), it
equals the spread computed from the runs' rows in Python (pair_cells below, the reference).
The experiment page's analysis, kept under its runs and that spread, is never stale either."""

from collections import defaultdict

import numpy as np
import pytest

from experiments.analysis import aa
from experiments.analysis.cells import ROW_FIELDS, analysable, settings_text
from experiments.models import Run

from .factories import ExperimentFactory
from .test_aa import definition
from .test_analysis import done_run

pytestmark = pytest.mark.django_db


def pair_cells(first: list[dict], second: list[dict]) -> list[dict]:
    """The reference: two experiments' cells, each metric's median in the second over the
    first's, from their rows (analysable, undisturbed runs; positive values), in numpy."""
    return aa.pair_medians(cell_medians(first), cell_medians(second))


def cell_medians(rows: list[dict]) -> dict[tuple, dict[str, float]]:
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if analysable(row) and not row.get("disturbed"):
            cells[(row["engine"], settings_text(row))].append(row)
    return {
        key: {
            m: float(np.median(values))
            for m in aa.AA_METRICS
            if (values := [r[m] for r in cell_rows if r[m] is not None and r[m] > 0])
        }
        for key, cell_rows in cells.items()
    }


def reference(nights: list, checks: bool = True) -> dict:
    """The spread of `local` from its runs' rows: each night paired with the next one made."""
    rows = [list(Run.objects.filter(experiment=night).values(*ROW_FIELDS)) for night in nights]
    apart = [pair_cells(first, second) for first, second in zip(rows, rows[1:], strict=False)]
    found = aa.host_checks({"local"}).get("local", []) if checks else []
    return aa.spread([check["cells"] for check in found], apart)


def night(same: dict, level: float, name: str):
    made = ExperimentFactory(definition={**same, "name": name})
    for n, factor in enumerate((1.0, 1.03, 0.96)):
        done_run(
            made, recovery_seconds=level * factor, downtime_seconds=level * factor + 0.4, repetition=n + 1
        )
    return made


def test_the_spread_read_in_one_query_is_the_rows_own_after_every_event_that_changes_it():
    same = {**definition("nightly"), "engines": ["innodb"]}
    nights = [night(same, level, f"night {i}") for i, level in enumerate((1.0, 1.2, 0.9))]
    before = aa.host_spreads({"local"})["local"]
    assert before == reference(nights) and before["recovery_seconds"]["apart_pairs"] == 2

    nights.append(night(same, 1.6, "night 3"))  # a new experiment of that definition
    grown = aa.host_spreads({"local"})["local"]
    assert grown == reference(nights) and grown["recovery_seconds"]["apart_pairs"] == 3
    assert grown != before

    middle = Run.objects.filter(experiment=nights[-1]).order_by("recovery_seconds")[1]  # its median
    Run.objects.filter(id=middle.id).update(excluded=True, excluded_reason="a backup ran")
    excluded = aa.host_spreads({"local"})["local"]
    assert excluded == reference(nights) and excluded != grown

    Run.objects.filter(id=middle.id).update(excluded=False, excluded_reason="")  # included again
    assert aa.host_spreads({"local"})["local"] == reference(nights) == grown

    check = ExperimentFactory(definition={**same, "name": "A/A"}, aa_check=True)
    for n, seconds in enumerate((1.0, 1.4, 1.02, 1.38)):  # copies A and B, interleaved
        done_run(check, recovery_seconds=seconds, downtime_seconds=seconds + 0.4, repetition=n + 1)
    checked = aa.host_spreads({"local"})["local"]
    assert checked == reference(nights) and checked["recovery_seconds"]["checks"] == 1
    assert checked != grown


def test_the_experiment_pages_kept_analysis_is_the_one_worked_out_afresh_after_every_change(client, user):
    """The experiment page's cells, charts and findings come from the cache when nothing they stand
    on changed, and equal a fresh analysis (the cache emptied) after each change that should show:
    a run excluded, a run added, the host's spread moved by another experiment of the definition."""
    from django.core.cache import caches

    same = {**definition("nightly"), "engines": ["innodb"]}
    nights = [night(same, level, f"night {i}") for i, level in enumerate((1.0, 1.2, 0.8))]
    shown = nights[-1]
    for n, seconds in enumerate((1.6, 1.66, 1.55)):  # a second buffer pool: a finding compares them
        done_run(shown, buffer_pool_bytes=2**28, recovery_seconds=seconds, repetition=n + 1)
    client.force_login(user)

    def page() -> dict:
        context = client.get(f"/experiments/{shown.id}/").context
        return {name: context[name] for name in ("figures", "findings", "axes")} | {
            "summary": [[v["text"] for v in line["values"]] for line in context["summary"]]
        }

    def afresh() -> dict:
        caches["analysis"].clear()
        return page()

    first = afresh()
    assert page() == first  # from the cache
    slowest = Run.objects.filter(experiment=shown).order_by("-recovery_seconds")[0]
    Run.objects.filter(id=slowest.id).update(excluded=True, excluded_reason="a backup ran")
    excluded = page()
    assert excluded == afresh() and excluded != first

    done_run(shown, buffer_pool_bytes=2**28, recovery_seconds=1.62, repetition=4)
    added = page()
    assert added == afresh() and added != excluded

    nights.append(night(same, 3.0, "night 3"))  # another night: the host's spread moves
    spread_moved = page()
    assert spread_moved == afresh()
    assert "2.0x slower" in added["findings"][-1] and "within the noise floor" in spread_moved["findings"][-1]

"""The planner's questions and the runs it answers them from (GET /api/planner/ and /planner/).

One form validates both the page's and the API's parameters; the runs are the analysable ones
(done, neither suspect nor excluded) of one host and engine, and one server version if given.
"""

from django import forms

from .models import Run, RunStatus
from .planner import Plan, PlanRefused, Point, plan
from .vocabulary import ENGINES, choices

MAX_TARGET_SECONDS = 7 * 24 * 3600
MAX_WRITE_MB_PER_S = 100_000


class PlannerForm(forms.Form):
    host = forms.ChoiceField(help_text="the host (or import label) whose runs answer")
    engine = forms.ChoiceField(choices=choices(ENGINES), initial="innodb")
    server_version = forms.CharField(
        required=False, max_length=120, help_text="only runs of this server version (all if empty)"
    )
    target_downtime_seconds = forms.FloatField(
        label="Target downtime (s)",
        min_value=0.001,
        max_value=MAX_TARGET_SECONDS,
        help_text="the longest a crash may keep the database away, kill to first query",
    )
    write_mb_per_s = forms.FloatField(
        label="Write rate (MB/s)",
        required=False,
        min_value=0.001,
        max_value=MAX_WRITE_MB_PER_S,
        help_text="redo written per second at peak (MB/s); or give a run to take it from",
    )
    rate_run = forms.IntegerField(
        label="Write rate of run",
        required=False,
        min_value=1,
        help_text="a run whose log bytes written per second is the write rate",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        hosts = Run.objects.order_by("host_label").values_list("host_label", flat=True).distinct()
        self.fields["host"].choices = [(name, name) for name in hosts]

    def clean(self):
        data = super().clean()
        run_id = data.get("rate_run")
        if run_id and data.get("write_mb_per_s"):
            self.add_error("rate_run", "give a write rate or a run to take it from, not both")
        elif run_id:
            try:
                data["write_mb_per_s"] = write_rate_of(Run.objects.get(pk=run_id))
            except Run.DoesNotExist:
                self.add_error("rate_run", f"there is no run {run_id}")
            except ValueError as exc:
                self.add_error("rate_run", str(exc))
        return data


def write_rate_of(run: Run) -> float:
    """The run's redo write rate in MB/s: log bytes written over the workload's duration (rows
    inserted / achieved insert rate)."""
    if not (run.log_bytes_written and run.rows_inserted and run.achieved_insert_rate):
        raise ValueError(
            f"run {run.id} did not measure log bytes written and its workload's duration: type a rate"
        )
    seconds = run.rows_inserted / run.achieved_insert_rate
    return round(run.log_bytes_written / seconds / 1e6, 3)


def _runs(data: dict):
    runs = Run.objects.filter(
        status=RunStatus.DONE,
        suspect=False,
        excluded=False,
        host_label=data["host"],
        engine=data["engine"],
    )
    if data.get("server_version"):
        runs = runs.filter(server_version=data["server_version"])
    return runs


def plan_from(data: dict) -> tuple[Plan, list[Point]]:
    """The plan for a validated form's data, and the runs' points it stands on (for the chart);
    PlanRefused says why there is none."""
    runs = _runs(data)
    points = [
        Point(run_id, redo, downtime, log_size)
        for run_id, redo, downtime, log_size in runs.filter(
            redo_bytes__isnull=False, downtime_seconds__isnull=False
        )
        .order_by("id")
        .values_list("id", "redo_bytes", "downtime_seconds", "redo_log_bytes")
    ]
    page_samples = list(
        runs.filter(
            redo_log_bytes__isnull=False, pages_written__isnull=False, log_bytes_written__gt=0
        ).values_list("redo_log_bytes", "pages_written", "log_bytes_written")
    )
    try:
        answer = plan(points, data["target_downtime_seconds"], data.get("write_mb_per_s"), page_samples)
    except PlanRefused as refused:
        if not points:
            version = f" {data['server_version']}" if data.get("server_version") else ""
            refused.reason = (
                f"no finished run of {data['engine']}{version} on {data['host']} measured both the redo "
                "it replayed and its downtime (imported runs have no downtime: the runner measures it)"
            )
        raise
    return answer, points

"""The planner's question, as its page and GET /api/planner/ take it: one form for both, and the
write rate a run measured."""

from django import forms

from experiments.definition import BUILD_NAME
from experiments.engines import DEFAULT_ENGINE
from experiments.models import Run
from experiments.vocabulary import ENGINES, WORKLOADS, choices
from recovery_lab_cli.units import SizeError, as_row_id, parse_size

MAX_TARGET_SECONDS = 7 * 24 * 3600
MAX_WRITE_MB_PER_S = 100_000


class PlannerForm(forms.Form):
    host = forms.ChoiceField(help_text="the host (or import label) whose runs answer")
    engine = forms.ChoiceField(choices=choices(ENGINES), initial=DEFAULT_ENGINE)
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
        label="Write rate (MB/s, 1 MB = 10⁶ bytes)",
        required=False,
        min_value=0.001,
        max_value=MAX_WRITE_MB_PER_S,
        help_text="redo written per second at peak; or give a run to take it from",
    )
    experiments = forms.CharField(
        required=False,
        max_length=1000,
        help_text="only runs of these experiments (ids, comma-separated; all if empty)",
    )
    workload = forms.ChoiceField(
        required=False, choices=[("", "any"), *choices(WORKLOADS)], help_text="only runs of this workload"
    )
    buffer_pool_size = forms.CharField(
        required=False, max_length=20, help_text="only runs with this buffer pool, e.g. 1G"
    )
    server_build = forms.CharField(
        required=False, max_length=64, help_text="only runs of this build (system: the host's installed one)"
    )
    startup_probe_seconds = forms.FloatField(
        label="startupProbe budget (s)",
        required=False,
        min_value=1,
        max_value=MAX_TARGET_SECONDS,
        help_text="Kubernetes: failureThreshold x periodSeconds; held against the worst case, as 90 s is",
    )
    include_imported = forms.BooleanField(
        label="Imported runs too",
        required=False,
        help_text="by default only runs this lab's runners measured answer; imported ones come "
        "from whoever made the archive or the log",
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

    def clean_experiments(self) -> list[int]:
        text = self.cleaned_data.get("experiments") or ""
        ids = [as_row_id(part.strip()) for part in text.split(",") if part.strip()]
        if None in ids:
            raise forms.ValidationError("experiment ids, comma-separated, e.g. 3,7")
        return ids

    def clean_buffer_pool_size(self) -> int | None:
        text = self.cleaned_data.get("buffer_pool_size") or ""
        try:
            return parse_size(text) if text.strip() else None
        except SizeError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_server_build(self) -> str:
        build = (self.cleaned_data.get("server_build") or "").strip()
        if build and not BUILD_NAME.match(build):
            raise forms.ValidationError("a build name like 10.11.9 or system")
        return build

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

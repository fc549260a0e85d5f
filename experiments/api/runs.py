"""/api/runs/: runs with their metrics, attempts, samples and timeline; exclusion, annotation, CSV."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from experiments import roles, services
from experiments.api.common import AnnotationSerializer, CSVRenderer, annotated, wants_csv
from experiments.api.csv import runs_csv
from experiments.filters import RunFilter
from experiments.metrics import METRIC_NAMES
from experiments.models import (
    PER_RUN_DETAIL_FIELDS,
    Run,
    RunAttempt,
)
from recovery_lab_cli.units import below_resolution


class RunAttemptSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = RunAttempt
        fields = ["number", "host", "worker", "started_at", "ended_at", "outcome", "error", "transient"]


class RunSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host_label")
    metrics = serializers.SerializerMethodField()
    phases_below_resolution = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id",
            "experiment",
            "status",
            "host",
            "engine",
            "parameters",
            "server_options",
            "repetition",
            "image_of",  # crash.one_crash: the run whose crash this one restarted, else null
            "metrics",
            "error",
            "progress",
            "progress_percent",
            "imported",
            "server_version",
            "server_family",  # the family whose build ran it (runner/families/NAME); "" where unknown
            "phases",
            "phase_resolution",
            "phases_below_resolution",
            "suspect",
            "suspect_reason",
            "disturbed",
            "disturbed_reason",
            "excluded",
            "excluded_reason",
            "notes",
            "tags",
            "started_at",
            "finished_at",
        ]

    def get_metrics(self, run: Run) -> dict:
        return {name: getattr(run, name) for name in METRIC_NAMES}

    def get_phases_below_resolution(self, run: Run) -> list[str]:
        """Phases shorter than their lines could be timed: not zero, shorter than
        phase_resolution says."""
        return [
            name
            for name, seconds in run.phases.items()
            if below_resolution(seconds, run.phase_resolution.get(name))
        ]


class RunDetailSerializer(RunSerializer):
    """One run, with every attempt at it (where, which worker, how it ended)."""

    attempts = RunAttemptSerializer(source="attempt_rows", many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        # the seconds before the crash (experiments/ingest/seconds.py), the restart's timeline and
        # what else used the host (runner/noise.py), what the restart's threads used and the
        # verdict, and the CPU profile's function shares (experiments/ingest/resources.py, profile.py)
        fields = [*RunSerializer.Meta.fields, "attempts", "samples", "timeline", "noise", "resources"]


class ExclusionSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, help_text="why the run is left out of analysis")


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs, filtered; `?format=csv` streams every matching run (not a page), a metric a column."""

    serializer_class = RunSerializer
    filterset_class = RunFilter
    queryset = Run.objects.order_by("id")
    renderer_classes = [*viewsets.ReadOnlyModelViewSet.renderer_classes, CSVRenderer]

    def get_serializer_class(self):
        return RunDetailSerializer if self.action == "retrieve" else RunSerializer

    def get_queryset(self):
        runs = super().get_queryset()
        return runs if self.action == "retrieve" else runs.defer(*PER_RUN_DETAIL_FIELDS)

    @extend_schema(request=AnnotationSerializer, responses={200: RunSerializer})
    def partial_update(self, request, *args, **kwargs):
        """Notes and tags on a run: the experiment's author or an admin. Metrics never change here."""
        run = self.get_object()
        refused = annotated(request, run, run.experiment)
        return refused or Response(RunSerializer(Run.objects.get(pk=run.pk)).data)

    def list(self, request, *args, **kwargs):
        if wants_csv(request):
            return runs_csv(self.filter_queryset(self.get_queryset()))
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ExclusionSerializer, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def exclude(self, request, pk=None):
        """Leave the run out of charts and statistics, with a reason (kept, shown, reversible).
        The experiment's author or an admin only."""
        run = self.get_object()
        roles.require_change(request.user, run.experiment)
        body = ExclusionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            run = services.exclude_run(run.pk, body.validated_data["reason"], user=request.user)
        except ValueError as exc:
            return Response({"reason": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(RunSerializer(run).data)

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """This run only: queued, it never starts; running, it is stopped on its host, every process
        of its killed. It ends `cancelled`; runs waiting to restart the crash it was to keep fail,
        saying so. A finished run stays. The experiment's author or an admin only."""
        run = self.get_object()
        roles.require_change(request.user, run.experiment)
        services.cancel_experiment(run.experiment_id, user=request.user, run_id=run.pk)
        return Response(RunSerializer(Run.objects.get(pk=run.pk)).data)

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def include(self, request, pk=None):
        """Take the run back into analysis. The experiment's author or an admin only."""
        run = self.get_object()
        roles.require_change(request.user, run.experiment)
        return Response(RunSerializer(services.include_run(run.pk, user=request.user)).data)

"""/api/experiments/: definitions in, experiments with their runs out; cancel, annotate, archive
export and import."""

import tempfile

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Prefetch, Q
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from experiments import roles, services
from experiments.api.common import AnnotationSerializer, annotated
from experiments.api.runs import RunSerializer
from experiments.definition import CHECKED_BEYOND_SCHEMA, DefinitionError, definition_json_schema
from experiments.filters import ExperimentFilter
from experiments.models import (
    PER_RUN_DETAIL_FIELDS,
    Experiment,
    Run,
    RunStatus,
)
from experiments.services.archive import ArchiveRejected, export_experiment, import_experiment
from workers.probing import probe_host

EXPERIMENT_FIELDS = [
    "id",
    "name",
    "status",
    "definition",
    "imported",
    "notes",
    "tags",
    "created_by",
    "created_at",
    "finished_at",
]


class ExperimentSerializer(serializers.ModelSerializer):
    runs = RunSerializer(many=True, read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Experiment
        fields = [*EXPERIMENT_FIELDS, "runs"]


class ExperimentSummarySerializer(serializers.ModelSerializer):
    """One line of the team's history (`GET /api/experiments/`): the experiment with its runs
    counted by status, not listed (`GET /api/experiments/{id}/` or `/api/runs/?experiment=` has
    them): a page of 100 sweeps of 200 runs would otherwise carry 20,000 runs."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    run_count = serializers.IntegerField(read_only=True)
    runs_queued = serializers.IntegerField(read_only=True)
    runs_running = serializers.IntegerField(read_only=True)
    runs_done = serializers.IntegerField(read_only=True)
    runs_failed = serializers.IntegerField(read_only=True)
    runs_cancelled = serializers.IntegerField(read_only=True)
    runs_stalled = serializers.IntegerField(read_only=True, help_text="runs whose recovery stopped moving")
    runs_suspect = serializers.IntegerField(
        read_only=True, help_text="runs done whose measurement is suspect (among runs_done)"
    )
    runs_excluded = serializers.IntegerField(
        read_only=True, help_text="runs left out of analysis by a person"
    )
    engines = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Experiment
        fields = [
            *EXPERIMENT_FIELDS,
            "run_count",
            *(f"runs_{state}" for state in RunStatus.values),
            "runs_suspect",
            "runs_excluded",
            "engines",
        ]


class ExperimentArchiveSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="an experiment exported by GET /api/experiments/{id}/export/")


def archive_response(experiment: Experiment) -> FileResponse:
    """The export as a download, spooled to disk past 64 MB (raw files can be large)."""
    spool = tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024)
    export_experiment(experiment, spool, settings.INSTALLATION_NAME)
    spool.seek(0)
    return FileResponse(
        spool,
        as_attachment=True,
        filename=f"experiment-{experiment.pk}.tar.gz",
        content_type="application/gzip",
    )


class ExperimentViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Experiments, filtered and sorted like the /experiments/ page (`?sort=-created`, `?tag=`,
    `?engine=`, ...). PATCH changes only notes and tags."""

    serializer_class = ExperimentSerializer
    filterset_class = ExperimentFilter
    queryset = Experiment.objects.select_related("created_by").prefetch_related(
        Prefetch("runs", queryset=Run.objects.defer(*PER_RUN_DETAIL_FIELDS))
    )

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list":  # counted, not listed; sortable by run count
            counts = {f"runs_{state}": Count("runs", filter=Q(runs__status=state)) for state in RunStatus}
            # a filter on status alone would take a suspect run for a good one: said apart
            counts["runs_suspect"] = Count("runs", filter=Q(runs__suspect=True))
            counts["runs_excluded"] = Count("runs", filter=Q(runs__excluded=True))
            queryset = queryset.prefetch_related(None).annotate(
                run_count=Count("runs"), engines=ArrayAgg("runs__engine", distinct=True, default=[]), **counts
            )
        return queryset

    def get_serializer_class(self):
        return ExperimentSummarySerializer if self.action == "list" else ExperimentSerializer

    @extend_schema(request=AnnotationSerializer, responses={200: ExperimentSerializer})
    def partial_update(self, request, *args, **kwargs):
        experiment = self.get_object()
        refused = annotated(request, experiment, experiment)
        return refused or Response(self.get_serializer(self.get_queryset().get(pk=experiment.pk)).data)

    @extend_schema(
        # the definition's schema and its validation come from the same tables
        request={"application/json": definition_json_schema()},
        responses={201: ExperimentSerializer, 200: ExperimentSerializer},
        extensions={"x-checked-beyond-schema": list(CHECKED_BEYOND_SCHEMA)},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                {"type": "string", "pattern": services.IDEMPOTENCY_KEY.pattern},
                OpenApiParameter.HEADER,
                description="A key of the client's choosing (letters, digits, '.', '_', ':', '-'; at "
                "most 100). Sent again with the same key, the request returns the experiment the "
                "first one created (200) instead of creating another.",
            )
        ],
    )
    def create(self, request, *args, **kwargs):
        try:
            experiment, created = services.create_experiment(
                request.data,
                user=request.user,
                idempotency_key=request.headers.get("Idempotency-Key", ""),
                probe=probe_host,
            )
        except DefinitionError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        except ValueError as exc:
            return Response({"Idempotency-Key": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        experiment = self.get_queryset().get(pk=experiment.pk)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(self.get_serializer(experiment).data, status=code)

    @extend_schema(
        responses={(200, "application/gzip"): OpenApiTypes.BINARY},
        description="The experiment as one .tar.gz (definition, runs with every metric, attempts, raw "
        "files) for POST /api/experiments/import/ on another installation. 409 while runs still go.",
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        experiment = self.get_object()
        try:
            return archive_response(experiment)
        except ArchiveRejected as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)

    @extend_schema(
        request={"multipart/form-data": ExperimentArchiveSerializer},
        responses={201: ExperimentSerializer},
        description="Store an export of another installation as a new experiment. 409 names the "
        "experiment when this installation has it already; 400 says what is wrong with the archive.",
        extensions={"x-checked-beyond-schema": ["file", "detail"]},
    )
    @action(detail=False, methods=["post"], url_path="import", parser_classes=[MultiPartParser])
    def import_archive(self, request):
        body = ExperimentArchiveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            experiment = import_experiment(body.validated_data["file"], user=request.user)
        except ArchiveRejected as exc:
            code = status.HTTP_409_CONFLICT if exc.duplicate else status.HTTP_400_BAD_REQUEST
            answer = {"detail": str(exc)}
            if exc.duplicate:
                answer["existing"] = exc.duplicate.pk
            return Response(answer, status=code)
        experiment = self.get_queryset().get(pk=experiment.pk)
        return Response(self.get_serializer(experiment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ExperimentSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Queued runs never start; running runs are stopped on their hosts and every process of
        theirs killed; they end `cancelled`. Finished runs stay. The author or an admin only."""
        experiment = self.get_object()
        roles.require_change(request.user, experiment)
        services.cancel_experiment(experiment.pk, user=request.user)
        return Response(self.get_serializer(self.get_queryset().get(pk=experiment.pk)).data)

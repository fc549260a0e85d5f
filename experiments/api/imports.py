"""/api/imports/: logs of runs made elsewhere, uploaded and parsed into runs."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments import roles
from experiments.api.runs import RunSerializer
from experiments.definition import EXPERIMENT_NAME
from experiments.models import Engine, Experiment, LogImport
from experiments.services.imports import (
    HOST_LABEL,
    IMPORT_FILES,
    MAX_INSERT_RATE,
    MAX_REDO_BYTES,
    SERVER_VERSION,
    ImportRejected,
    import_runs,
)
from recovery_lab_cli.units import SIZE_TEXT


class ImportSerializer(serializers.Serializer):
    """The multipart import: each field's shape checked here as the schema states it; what the
    files hold (a crash recovery to find, the engine's own files), the time zone's name and the
    experiment to add to are import_runs' to check."""

    error_log = serializers.FileField(help_text="the server's error log through the crash recovery")
    innodb_status_before = serializers.FileField(required=False)
    innodb_status_at_crash = serializers.FileField(required=False, help_text="taken just before the crash")
    innodb_status_after = serializers.FileField(required=False)
    rocksdb_status_at_crash = serializers.FileField(required=False)
    rocksdb_log = serializers.FileField(required=False, help_text="RocksDB's LOG (required for MyRocks)")
    sysbench_report = serializers.FileField(required=False)
    engine = serializers.ChoiceField(choices=Engine.values)
    server_version = serializers.RegexField(SERVER_VERSION, required=False, help_text="e.g. 8.0.36")
    buffer_pool_size = serializers.RegexField(
        SIZE_TEXT, required=False, help_text="with a unit: 128M, 8G; left out: not known"
    )
    redo_log_size = serializers.RegexField(
        SIZE_TEXT, required=False, help_text="with a unit: 512M, 2G; left out: not known"
    )
    insert_rate = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_INSERT_RATE,
        help_text="rows/s the workload ran at; 0 unthrottled",
    )
    host_label = serializers.RegexField(HOST_LABEL, help_text="where the run was done, e.g. db7.prod")
    timezone = serializers.CharField(required=False, help_text="IANA zone of the log's local times; UTC")
    redo_bytes = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_REDO_BYTES,
        help_text="redo/WAL replayed, where the log lacks it",
    )
    experiment = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="add to this experiment"
    )
    experiment_name = serializers.RegexField(
        EXPERIMENT_NAME, required=False, help_text="else a new imported experiment"
    )


class ImportResultSerializer(serializers.Serializer):
    experiment = serializers.IntegerField()
    runs = RunSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


class LogImportSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    runs = serializers.SerializerMethodField()

    class Meta:
        model = LogImport
        fields = [
            "id", "created_at", "created_by", "host_label", "engine", "server_version",
            "experiment", "files", "run_count", "runs", "warnings", "source_sha256",
        ]  # fmt: skip

    def get_runs(self, item: LogImport) -> list[int]:
        return list(item.runs.values_list("id", flat=True)) if item.experiment_id else []


class ImportView(APIView):
    """GET /api/imports/: every import, newest first (who, when, from which host, which files,
    what they became). POST: runs done elsewhere, one per crash recovery found in the error log."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses={200: LogImportSerializer(many=True)})
    def get(self, request):
        paginator = PageNumberPagination()
        found = LogImport.objects.select_related("created_by")
        page = paginator.paginate_queryset(found, request, view=self)
        return paginator.get_paginated_response(LogImportSerializer(page, many=True).data)

    @extend_schema(
        request={"multipart/form-data": ImportSerializer},
        responses={201: ImportResultSerializer},
        extensions={"x-checked-beyond-schema": [*IMPORT_FILES, "timezone", "experiment", "detail"]},
    )
    def post(self, request):
        body = ImportSerializer(data=request.data)
        if not body.is_valid():
            return Response(body.errors, status=status.HTTP_400_BAD_REQUEST)
        uploads = {name: request.FILES[name] for name in request.FILES}
        data = {key: request.data.get(key) for key in request.data if key not in request.FILES}
        experiment = body.validated_data.get("experiment")
        data.pop("experiment", None)
        target = Experiment.objects.filter(pk=experiment).first() if experiment is not None else None
        if target is not None:
            roles.require_change(request.user, target)
        try:
            result = import_runs(
                {name: upload.file for name, upload in uploads.items()},
                data,
                experiment_id=experiment,
                experiment_name=data.pop("experiment_name", "") or "",
                user=request.user,
                names={name: upload.name for name, upload in uploads.items()},
            )
        except ImportRejected as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        body = {
            "experiment": result.experiment.pk,
            "runs": RunSerializer(result.runs, many=True).data,
            "warnings": result.warnings,
        }
        return Response(body, status=status.HTTP_201_CREATED)

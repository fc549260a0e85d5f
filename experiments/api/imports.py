"""/api/imports/: logs of runs made elsewhere, uploaded and parsed into runs."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments import roles
from experiments.api.runs import RunSerializer
from experiments.models import (
    Experiment,
)
from experiments.services.imports import ImportRejected, import_runs
from experiments.units import as_row_id


class ImportSerializer(serializers.Serializer):
    """Documents the multipart import for the schema; validation is import_runs'."""

    error_log = serializers.FileField(help_text="the server's error log through the crash recovery")
    innodb_status_before = serializers.FileField(required=False)
    innodb_status_at_crash = serializers.FileField(required=False, help_text="taken just before the crash")
    innodb_status_after = serializers.FileField(required=False)
    rocksdb_status_at_crash = serializers.FileField(required=False)
    rocksdb_log = serializers.FileField(required=False, help_text="RocksDB's LOG (required for MyRocks)")
    sysbench_report = serializers.FileField(required=False)
    engine = serializers.ChoiceField(choices=["innodb", "rocksdb", "tokudb"])
    server_version = serializers.CharField(required=False)
    buffer_pool_size = serializers.CharField(help_text="with a unit: 128M, 8G")
    redo_log_size = serializers.CharField(help_text="with a unit: 512M, 2G")
    insert_rate = serializers.IntegerField(
        required=False, help_text="rows/s the workload ran at; 0 unthrottled"
    )
    host_label = serializers.CharField(help_text="where the run was done, e.g. db7.prod")
    timezone = serializers.CharField(required=False, help_text="IANA zone of the log's local times; UTC")
    redo_bytes = serializers.IntegerField(
        required=False, help_text="redo/WAL replayed, where the log lacks it"
    )
    experiment = serializers.IntegerField(required=False, help_text="add to this experiment")
    experiment_name = serializers.CharField(required=False, help_text="else a new imported experiment")


class ImportResultSerializer(serializers.Serializer):
    experiment = serializers.IntegerField()
    runs = RunSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


class ImportView(APIView):
    """POST /api/imports/: runs done elsewhere, one per crash recovery found in the error log."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": ImportSerializer}, responses={201: ImportResultSerializer})
    def post(self, request):
        uploads = {name: request.FILES[name] for name in request.FILES}
        data = {key: request.data.get(key) for key in request.data if key not in request.FILES}
        experiment = data.pop("experiment", None)
        if experiment not in (None, "") and as_row_id(str(experiment)) is None:
            return Response({"experiment": ["an experiment id"]}, status=status.HTTP_400_BAD_REQUEST)
        target = Experiment.objects.filter(pk=experiment).first() if experiment not in (None, "") else None
        if target is not None:
            roles.require_change(request.user, target)
        try:
            result = import_runs(
                {name: upload.file for name, upload in uploads.items()},
                data,
                experiment_id=int(experiment) if experiment not in (None, "") else None,
                experiment_name=data.pop("experiment_name", "") or "",
                user=request.user,
            )
        except ImportRejected as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        body = {
            "experiment": result.experiment.pk,
            "runs": RunSerializer(result.runs, many=True).data,
            "warnings": result.warnings,
        }
        return Response(body, status=status.HTTP_201_CREATED)

"""REST API (DESIGN.md, "Commands and API that scripts rely on")."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .definition import DefinitionError
from .imports import ImportRejected, import_runs
from .metrics import METRIC_NAMES
from .models import Experiment, Host, Run, Transport


class RunSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host_label")
    metrics = serializers.SerializerMethodField()

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
            "metrics",
            "error",
            "progress",
            "imported",
            "server_version",
            "started_at",
            "finished_at",
        ]

    def get_metrics(self, run: Run) -> dict:
        return {name: getattr(run, name) for name in METRIC_NAMES}


class ExperimentSerializer(serializers.ModelSerializer):
    runs = RunSerializer(many=True, read_only=True)

    class Meta:
        model = Experiment
        fields = ["id", "name", "status", "definition", "imported", "created_at", "finished_at", "runs"]


class DefinitionSerializer(serializers.Serializer):
    """Documents the definition's shape for the schema; validation is validate_definition's."""

    name = serializers.CharField()
    hosts = serializers.ListField(child=serializers.CharField())
    engines = serializers.ListField(child=serializers.ChoiceField(choices=["innodb", "rocksdb"]))
    parameters = serializers.DictField(required=False)
    server_options = serializers.DictField(required=False)
    workload = serializers.DictField(required=False)
    crash = serializers.DictField(required=False)
    repetitions = serializers.IntegerField(required=False)


class ExperimentViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = ExperimentSerializer
    queryset = Experiment.objects.prefetch_related("runs")

    @extend_schema(request=DefinitionSerializer, responses={201: ExperimentSerializer})
    def create(self, request, *args, **kwargs):
        try:
            experiment = services.create_experiment(request.data, user=request.user)
        except DefinitionError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        experiment = self.get_queryset().get(pk=experiment.pk)
        return Response(self.get_serializer(experiment).data, status=status.HTTP_201_CREATED)


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RunSerializer

    def get_queryset(self):
        runs = Run.objects.all()
        params = self.request.query_params
        if params.get("engine"):
            runs = runs.filter(engine=params["engine"])
        if params.get("host"):
            runs = runs.filter(host_label=params["host"])
        if params.get("experiment", "").isdigit():
            runs = runs.filter(experiment_id=int(params["experiment"]))
        return runs.order_by("id")


class HostSerializer(serializers.ModelSerializer):
    transport = serializers.ChoiceField(choices=Transport.choices)

    class Meta:
        model = Host
        fields = [
            "id",
            "name",
            "transport",
            "ssh_user",
            "ssh_host",
            "ssh_port",
            "ssh_key_path",
            "active",
            "created_at",
        ]
        read_only_fields = ["active", "created_at"]
        extra_kwargs = {"name": {"validators": []}}

    def create(self, validated_data):
        try:
            return services.register_host(**validated_data)
        except ValueError as exc:
            raise serializers.ValidationError({"name": [str(exc)]}) from None


class HostViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = HostSerializer
    queryset = Host.objects.all()


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
        if experiment not in (None, "") and not str(experiment).isdigit():
            return Response({"experiment": ["an experiment id"]}, status=status.HTTP_400_BAD_REQUEST)
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

"""REST API (DESIGN.md, "Commands and API that scripts rely on")."""

import re
import tempfile

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Prefetch, Q
from django.http import FileResponse, HttpResponse
from django.utils.module_loading import import_string
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, mixins, renderers, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from . import roles, services
from .archive import ArchiveRejected, export_experiment, import_experiment
from .cells import ROW_FIELDS
from .comparisons import compare_experiments
from .definition import DefinitionError
from .explore import GROUPS, X_AXES, Y_AXES, ExploreError, Query, explore
from .export import explore_csv, runs_csv
from .filters import AnalysisFilter, ExperimentFilter, RunFilter
from .imports import ImportRejected, import_runs
from .metrics import METRIC_NAMES
from .models import PER_RUN_DETAIL_FIELDS, Experiment, Host, HostStatus, Run, RunAttempt, RunStatus, Transport
from .planner import PlanRefused
from .planning import PlannerForm, plan_from
from .ssh_keys import dashboard_public_key
from .vocabulary import ENGINES, RUNNABLE_ENGINES

PROBE_HOST = services.PROBE_HOST


class CSVRenderer(renderers.BaseRenderer):
    """Lets `?format=csv` through DRF's negotiation; the views stream the CSV themselves."""

    media_type = "text/csv"
    format = "csv"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else str(data).encode()


def wants_csv(request) -> bool:
    return getattr(request.accepted_renderer, "format", None) == "csv"


class RunAttemptSerializer(serializers.ModelSerializer):
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = RunAttempt
        fields = ["number", "host", "worker", "started_at", "ended_at", "outcome", "error", "transient"]


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
            "progress_percent",
            "imported",
            "server_version",
            "phases",
            "suspect",
            "suspect_reason",
            "excluded",
            "excluded_reason",
            "notes",
            "tags",
            "started_at",
            "finished_at",
        ]

    def get_metrics(self, run: Run) -> dict:
        return {name: getattr(run, name) for name in METRIC_NAMES}


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
    engines = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Experiment
        fields = [
            *EXPERIMENT_FIELDS,
            "run_count",
            *(f"runs_{state}" for state in RunStatus.values),
            "engines",
        ]


class AnnotationSerializer(serializers.Serializer):
    """What a team may change on an experiment or a run: its notes and tags (never a metric)."""

    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000, trim_whitespace=False)
    tags = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=12)


def annotated(request, target, experiment) -> Response | None:
    """PATCH {"notes", "tags"} on an experiment or a run: its author or an admin; 400 per field."""
    roles.require_change(request.user, experiment)
    body = AnnotationSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        data = body.validated_data
        services.annotate(target, notes=data.get("notes"), tags=data.get("tags"), user=request.user)
    except services.AnnotationRejected as exc:
        return Response({k: [v] for k, v in exc.errors.items()}, status=status.HTTP_400_BAD_REQUEST)
    return None


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


class DefinitionSerializer(serializers.Serializer):
    """Documents the definition's shape for the schema; validation is validate_definition's."""

    name = serializers.CharField()
    hosts = serializers.ListField(child=serializers.CharField())
    engines = serializers.ListField(child=serializers.ChoiceField(choices=list(RUNNABLE_ENGINES)))
    parameters = serializers.DictField(required=False)
    server_options = serializers.DictField(required=False)
    workload = serializers.DictField(required=False)
    crash = serializers.DictField(required=False)
    repetitions = serializers.IntegerField(required=False)
    description = serializers.CharField(required=False, help_text="the question it asks (its notes)")
    tags = serializers.ListField(child=serializers.CharField(), required=False)


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
        request=DefinitionSerializer,
        responses={201: ExperimentSerializer, 200: ExperimentSerializer},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
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
                request.data, user=request.user, idempotency_key=request.headers.get("Idempotency-Key", "")
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


class RunDetailSerializer(RunSerializer):
    """One run, with every attempt at it (where, which worker, how it ended)."""

    attempts = RunAttemptSerializer(source="attempt_rows", many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        # the seconds before the crash (experiments/seconds.py) and the restart's timeline
        fields = [*RunSerializer.Meta.fields, "attempts", "samples", "timeline"]


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
    def include(self, request, pk=None):
        """Take the run back into analysis. The experiment's author or an admin only."""
        run = self.get_object()
        roles.require_change(request.user, run.experiment)
        return Response(RunSerializer(services.include_run(run.pk, user=request.user)).data)


class ExploreSeriesSerializer(serializers.Serializer):
    name = serializers.CharField()
    x = serializers.ListField(child=serializers.JSONField())
    y = serializers.ListField(child=serializers.FloatField())
    run_ids = serializers.ListField(child=serializers.IntegerField())


class ExploreFitSerializer(serializers.Serializer):
    series = serializers.CharField()
    slope = serializers.FloatField()
    intercept = serializers.FloatField()
    r2 = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    reads_as = serializers.CharField(help_text="bytes over seconds read as MB/s (the apply rate), else empty")


class ExploreResultSerializer(serializers.Serializer):
    x = serializers.CharField()
    y = serializers.CharField()
    group = serializers.CharField()
    count = serializers.IntegerField()
    series = ExploreSeriesSerializer(many=True)
    fits = ExploreFitSerializer(many=True)


class ExploreView(generics.GenericAPIView):
    """GET /api/explore/: Y against X per group, with a fitted line per group where X is numeric.
    `?format=csv` gives the points, one line per run."""

    renderer_classes = [*APIView.renderer_classes, CSVRenderer]
    filterset_class = AnalysisFilter  # suspect and excluded runs are left out unless asked for
    queryset = Run.objects.all()
    serializer_class = ExploreResultSerializer
    pagination_class = None

    @extend_schema(
        filters=True,
        parameters=[
            OpenApiParameter("x", OpenApiTypes.STR, enum=list(X_AXES), description="a parameter or metric"),
            OpenApiParameter("y", OpenApiTypes.STR, enum=list(Y_AXES), description="a numeric metric"),
            OpenApiParameter("group", OpenApiTypes.STR, enum=list(GROUPS), description="engine by default"),
        ],
        responses={200: ExploreResultSerializer},
    )
    def get(self, request):
        try:
            query = Query.from_params(request.query_params)
        except ExploreError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        result = explore(self.filter_queryset(self.get_queryset()), query)
        if wants_csv(request):
            return explore_csv(result.to_dict())
        return HttpResponse(result.to_json(), content_type="application/json")


class CompareView(APIView):
    """GET /api/compare/?experiments=A,B: cells matched on engine and parameters; the ratio of
    B's typical value to A's with its 95% interval and a Welch t-test; engines compared at the
    same settings; slowdowns beyond the noise listed as regressions."""

    @extend_schema(
        parameters=[
            OpenApiParameter("experiments", OpenApiTypes.STR, description="ids, comma-separated: A,B[,C]"),
            OpenApiParameter(
                "ignore",
                OpenApiTypes.STR,
                description="parameters or server options, comma-separated, left out of the match (the "
                "change under test, e.g. server_build or buffer_pool_size): runs are pooled over them",
            ),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        try:
            ids = parse_experiment_ids(request.query_params.get("experiments", ""))
        except ValueError as exc:
            return Response({"experiments": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            ignore = parse_ignored(request.query_params.get("ignore", ""))
        except ValueError as exc:
            return Response({"ignore": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(comparison(ids, ignore))


class PlannerView(APIView):
    """GET /api/planner/: the largest redo that keeps the downtime after a crash under a target on
    one host and engine, with its 95% prediction interval, from the runs measured there; with a
    write rate, how many seconds of writes the suggested redo log holds. 400 on bad parameters,
    422 with the reason when the runs cannot carry an answer (too few, no growth with redo)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "host", OpenApiTypes.STR, required=True, description="host name or import label"
            ),
            OpenApiParameter("engine", OpenApiTypes.STR, required=True, enum=[t.value for t in ENGINES]),
            OpenApiParameter("target_downtime_seconds", OpenApiTypes.NUMBER, required=True),
            OpenApiParameter("server_version", OpenApiTypes.STR, description="only runs of this version"),
            OpenApiParameter("write_mb_per_s", OpenApiTypes.NUMBER, description="redo written per second"),
            OpenApiParameter("rate_run", OpenApiTypes.INT, description="take the write rate from this run"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 422: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        form = PlannerForm(request.query_params)
        if not form.is_valid():
            return Response(form.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            answer, _ = plan_from(form.cleaned_data)
        except PlanRefused as refused:
            return Response(
                {"detail": refused.reason, "based_on_runs": refused.based_on_runs},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(answer.as_dict())


def parse_experiment_ids(text: str) -> list[int]:
    """'3,7' -> [3, 7]; two to six existing experiments, each once."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts) or not 2 <= len(parts) <= 6 or len(set(parts)) != len(parts):
        raise ValueError("two to six different experiment ids, comma-separated, e.g. 3,7")
    ids = [int(p) for p in parts]
    missing = set(ids) - set(Experiment.objects.filter(id__in=ids).values_list("id", flat=True))
    if missing:
        raise ValueError(f"no experiment {', '.join(map(str, sorted(missing)))}")
    return ids


IGNORED_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def parse_ignored(text: str) -> frozenset:
    """'server_build,buffer_pool_size' -> those names (parameter or option names, nothing else)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [name for name in names if not IGNORED_NAME.match(name)]
    if bad:
        raise ValueError(f"not a parameter or option name: {', '.join(bad)[:200]}")
    return frozenset(names)


def comparison(ids: list[int], ignore: frozenset = frozenset()) -> dict:
    rows = list(Run.objects.filter(experiment_id__in=ids).values(*ROW_FIELDS))
    names = dict(Experiment.objects.filter(id__in=ids).values_list("id", "name"))
    return compare_experiments(rows, ids, names, ignore)


class HostSerializer(serializers.ModelSerializer):
    transport = serializers.ChoiceField(choices=Transport.choices)
    status = serializers.SerializerMethodField()
    public_key = serializers.SerializerMethodField(
        help_text="the dashboard's SSH key: put it in the host's authorized_keys"
    )

    class Meta:
        model = Host
        fields = [
            "id",
            "name",
            "transport",
            "ssh_user",
            "ssh_host",
            "ssh_port",
            "work_dir",
            "status",
            "facts",
            "last_seen",
            "last_error",
            "host_key_fingerprint",
            "offered_host_key_fingerprint",
            "public_key",
            "active",
            "created_at",
        ]
        read_only_fields = [
            "facts",
            "last_seen",
            "last_error",
            "host_key_fingerprint",
            "offered_host_key_fingerprint",
            "active",
            "created_at",
        ]
        extra_kwargs = {"name": {"validators": []}}

    def get_status(self, host: Host) -> str:
        if not hasattr(host, "running_count"):  # just created or updated: nothing runs on it yet
            return host.status
        return host.current_status

    def get_public_key(self, host: Host) -> str:
        return dashboard_public_key() if host.transport == Transport.SSH else ""

    def create(self, validated_data):
        try:
            return services.register_host(**validated_data, user=self.context["request"].user)
        except ValueError as exc:
            raise serializers.ValidationError({"name": [str(exc)]}) from None


class ProbeResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=HostStatus.choices)
    facts = serializers.DictField()
    host_key_fingerprint = serializers.CharField()
    offered_host_key_fingerprint = serializers.CharField(
        required=False, help_text="the key an unconfirmed host offers: compare it on the host, then trust it"
    )
    error = serializers.CharField(required=False)


class TrustHostKeySerializer(serializers.Serializer):
    fingerprint = serializers.RegexField(
        r"^SHA256:[A-Za-z0-9+/]{43}$",
        help_text="the host key's SHA256 fingerprint, as `ssh-keygen -lf` prints it on the host",
    )


class HostViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = HostSerializer
    queryset = Host.objects.with_activity()
    permission_classes = [roles.AdminWrites]

    @extend_schema(request=None, responses={200: ProbeResultSerializer})
    @action(detail=True, methods=["post"])
    def probe(self, request, pk=None):
        """Connect now and read the host's facts over its confirmed key; a host with no confirmed
        key is only asked for the key it offers (status unverified, offered_host_key_fingerprint)."""
        probe_host = import_string(PROBE_HOST)  # by name: experiments never imports workers
        return Response(probe_host(self.get_object().pk))

    @extend_schema(request=TrustHostKeySerializer, responses={200: HostSerializer})
    @action(detail=True, methods=["post"], url_path="trust-host-key")
    def trust_host_key(self, request, pk=None):
        """Admins: pin the key the last probe read, confirming its fingerprint (400 when it is not
        the one the host offered). Nothing is sent to an SSH host before."""
        body = TrustHostKeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            host = services.trust_host_key(
                self.get_object().pk, body.validated_data["fingerprint"], request.user
            )
        except services.HostKeyRejected as exc:
            raise serializers.ValidationError({"fingerprint": [str(exc)]}) from None
        return Response(HostSerializer(host, context={"request": request}).data)


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

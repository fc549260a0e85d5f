"""/api/explore/, /api/compare/ and /api/planner/: the questions asked of many runs."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments.analysis.compare import (
    IGNORABLE,
    MAX_COMPARED,
    NoSuchExperiment,
    comparison,
    parse_experiment_ids,
    parse_ignored,
)
from experiments.analysis.explore import GROUPS, X_AXES, Y_AXES, ExploreError, Query, explore
from experiments.analysis.planner import PlanRefused, plan_from
from experiments.analysis.planner_form import MAX_TARGET_SECONDS, MAX_WRITE_MB_PER_S, PlannerForm
from experiments.analysis.sentences import COMPARED_METRICS, RESOURCE_METRICS
from experiments.api.common import CSVRenderer, wants_csv
from experiments.api.csv import explore_csv
from experiments.definition import BUILD_NAME
from experiments.filters import ID, NO_NUL, AnalysisFilter
from experiments.models import (
    Run,
)
from experiments.vocabulary import ENGINES, WORKLOAD_NAMES
from recovery_lab_cli.units import SIZE_TEXT

# what ?tested= may name: the page's metrics and the recovery's resources
TESTABLE = sorted({*COMPARED_METRICS, *RESOURCE_METRICS})


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
    reads_as = serializers.CharField(
        help_text="bytes over seconds as MiB/s (the apply rate); 'no rate: WHY' where the runs cannot "
        "carry one"
    )


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
        runs = self.filter_queryset(self.get_queryset())
        if wants_csv(request):
            return explore_csv(runs, query)
        result = explore(runs, query)
        return HttpResponse(result.to_json(), content_type="application/json")


class CompareView(APIView):
    """GET /api/compare/?experiments=A,B: cells matched on engine and parameters; the ratio of
    B's typical value to A's with its 95% interval, significant when Welch's t-test says so (its p
    adjusted over the answer's `family` of comparisons, Benjamini-Hochberg: `p_adjusted`;
    `within_family` where only that held it back) and the ratio is beyond the hosts' noise floor
    (`min_effect`; `within_floor` where only the floor held it back; `noise_floor` and
    `aa_spreads` say what each host's floor stands on: docs/statistics.md); `detectable`, the
    smallest ratio its runs could have called, and `too_few` where that is 2x or more; `runs`,
    `typical` (the geometric means the ratio is of) and `medians`, A's first; engines compared at
    the same settings; slowdowns beyond the noise listed as regressions; `differences` between
    the definitions, and how far apart they ran."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "experiments",
                {
                    "type": "array",
                    "items": ID,
                    "minItems": 2,
                    "maxItems": MAX_COMPARED,
                    "uniqueItems": True,
                },
                required=True,
                explode=False,
                description="ids, comma-separated: A,B[,C]; the first is the baseline (404 naming "
                "those that do not exist)",
            ),
            OpenApiParameter(
                "ignore",
                {"type": "array", "items": {"type": "string", "enum": list(IGNORABLE)}},
                explode=False,
                description="parameters or server options, comma-separated, left out of the match (the "
                "change under test, e.g. server_build or buffer_pool_size): runs are pooled over them",
            ),
            OpenApiParameter(
                "tested",
                {"type": "array", "items": {"type": "string", "enum": TESTABLE}},
                explode=False,
                description="the metrics you decide on, comma-separated (a gate's): their p-values are "
                "adjusted together, as one family; by default every compared metric is. The recovery's "
                "resources (recovery_cpu_seconds, recovery_disk_read_bytes...) are each tested alone",
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        try:
            ids = parse_experiment_ids(request.query_params.get("experiments", ""))
        except NoSuchExperiment as exc:
            return Response({"experiments": [str(exc)]}, status=status.HTTP_404_NOT_FOUND)
        except ValueError as exc:
            return Response({"experiments": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            ignore = parse_ignored(request.query_params.get("ignore", ""))
        except ValueError as exc:
            return Response({"ignore": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        tested = frozenset(name for name in request.query_params.get("tested", "").split(",") if name.strip())
        unknown = sorted(tested - set(TESTABLE))
        if unknown:
            known = ", ".join([*COMPARED_METRICS, *RESOURCE_METRICS])
            return Response(
                {"tested": [f"not a compared metric: {', '.join(unknown)} (one of {known})"]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(comparison(ids, ignore, tested))


class PlannerView(APIView):
    """GET /api/planner/: the largest redo that keeps the downtime after a crash under a target on
    one host and engine, with its 95% prediction interval, from the runs measured there; with a
    write rate, how many seconds of writes the suggested redo log holds. 400 on bad parameters,
    422 with the reason when the runs cannot carry an answer (too few, no growth with redo)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "host",
                {"type": "string", "minLength": 1, "pattern": NO_NUL},
                required=True,
                description="host name or import label (404 when no run was measured there)",
            ),
            OpenApiParameter("engine", OpenApiTypes.STR, required=True, enum=[t.value for t in ENGINES]),
            OpenApiParameter(
                "target_downtime_seconds",
                {"type": "number", "minimum": 0.001, "maximum": MAX_TARGET_SECONDS},
                required=True,
            ),
            OpenApiParameter(
                "server_version",
                {"type": "string", "maxLength": 120, "pattern": NO_NUL},
                description="only runs of this version",
            ),
            OpenApiParameter(
                "write_mb_per_s",
                {"type": "number", "minimum": 0.001, "maximum": MAX_WRITE_MB_PER_S},
                description="redo written per second",
            ),
            OpenApiParameter("rate_run", ID, description="take the write rate from this run"),
            OpenApiParameter(
                "startup_probe_seconds",
                {"type": "number", "minimum": 1, "maximum": MAX_TARGET_SECONDS},
                description="a Kubernetes startupProbe budget, held against the worst case",
            ),
            OpenApiParameter(
                "experiments",
                {"type": "array", "items": ID, "maxItems": 20},
                explode=False,
                description="only runs of these experiments (ids, comma-separated)",
            ),
            OpenApiParameter(
                "workload", OpenApiTypes.STR, enum=list(WORKLOAD_NAMES), description="only its runs"
            ),
            OpenApiParameter(
                "buffer_pool_size",
                {"type": "string", "pattern": SIZE_TEXT},
                description="only runs with this buffer pool, e.g. 1G",
            ),
            OpenApiParameter(
                "server_build",
                {"type": "string", "pattern": BUILD_NAME.pattern},
                description="only runs of this build (system: the host's installed one)",
            ),
        ],
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
            422: OpenApiTypes.OBJECT,
        },  # a write rate or a run to take it from, not both: a rule between parameters
        extensions={"x-checked-beyond-schema": ["rate_run"]},
    )
    def get(self, request):
        form = PlannerForm(request.query_params)
        if not form.is_valid():
            errors = form.errors.get_json_data()
            # well formed, but no run of that host to answer from: 404, unless another parameter is
            # malformed (the rate_run's rules need a host's runs, so they wait for one)
            unknown_host = "host" in errors and errors["host"][0]["code"] == "invalid_choice"
            if unknown_host and set(errors) <= {"host", "rate_run"}:
                return Response(
                    {"host": [f"no run was measured on {request.query_params.get('host')!r}"]},
                    status=status.HTTP_404_NOT_FOUND,
                )
            return Response(form.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            answer, _ = plan_from(form.cleaned_data)
        except PlanRefused as refused:
            return Response(
                {"detail": refused.reason, "based_on_runs": refused.based_on_runs},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(answer.as_dict())

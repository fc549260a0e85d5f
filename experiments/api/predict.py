"""GET /api/predict/: the downtime a crash would cause at given redo volumes, from a lab host's
runs of one engine and server release, with the fit itself (what `recovery-lab exporter` computes
at each scrape). The live server's credentials never come here: only its version and the redo
volumes do."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments.analysis.planner import PlanRefused
from experiments.analysis.predict import SETTINGS, lab_fit
from experiments.filters import NO_NUL
from experiments.models import Run
from experiments.vocabulary import ENGINES

MAX_VOLUMES = 10
MAX_REDO_BYTES = 2**62


class PredictQuery(serializers.Serializer):
    host = serializers.CharField(max_length=120)
    engine = serializers.ChoiceField(choices=[t.value for t in ENGINES])
    server_version = serializers.CharField(max_length=120)
    redo_bytes = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_REDO_BYTES),
        max_length=MAX_VOLUMES,
        required=False,
    )
    include_imported = serializers.BooleanField(required=False, default=False)
    buffer_pool_bytes = serializers.IntegerField(min_value=1, max_value=MAX_REDO_BYTES, required=False)
    redo_log_bytes = serializers.IntegerField(min_value=1, max_value=MAX_REDO_BYTES, required=False)

    def validate(self, data):
        for name in ("host", "server_version"):
            if "\x00" in data[name]:
                raise serializers.ValidationError({name: "no NUL characters"})
        return data


class PredictView(APIView):
    """GET /api/predict/: 200 with the fit and a prediction per redo volume (each with its 95%
    prediction interval, or the reason it is refused: far beyond what the lab replayed); 400 on
    bad parameters; 404 when no run was measured on the host; 422 with the reason when the lab
    cannot stand for this server (another release, too few runs)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "host",
                {"type": "string", "minLength": 1, "maxLength": 120, "pattern": NO_NUL},
                required=True,
                description="the lab host whose runs answer",
            ),
            OpenApiParameter("engine", OpenApiTypes.STR, required=True, enum=[t.value for t in ENGINES]),
            OpenApiParameter(
                "server_version",
                {"type": "string", "minLength": 1, "maxLength": 120, "pattern": NO_NUL},
                required=True,
                description="the live server's version (SELECT VERSION(); PostgreSQL: 'PostgreSQL ' + "
                "SHOW server_version): runs of its release series answer",
            ),
            OpenApiParameter(
                "redo_bytes",
                {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 0, "maximum": MAX_REDO_BYTES},
                    "maxItems": MAX_VOLUMES,
                },
                description="redo volumes to predict at (repeat the parameter)",
            ),
            OpenApiParameter(
                "include_imported",
                OpenApiTypes.BOOL,
                description="also runs imported from archives and logs (by default only runs the "
                "lab's own runners measured answer)",
            ),
            *(
                OpenApiParameter(
                    name,
                    {"type": "integer", "minimum": 1, "maximum": MAX_REDO_BYTES},
                    description=f"the live server's {words} in bytes: the fit prefers runs of it and says "
                    "where its runs differ",
                )
                for name, words in SETTINGS
            ),
        ],
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
            422: OpenApiTypes.OBJECT,
        },
    )
    def get(self, request):
        names = ("host", "engine", "server_version", "include_imported", *(name for name, _ in SETTINGS))
        params = {key: request.query_params.get(key) for key in names}
        params = {key: value for key, value in params.items() if value is not None}
        if "redo_bytes" in request.query_params:
            params["redo_bytes"] = request.query_params.getlist("redo_bytes")
        query = PredictQuery(data=params)
        if not query.is_valid():
            return Response(query.errors, status=status.HTTP_400_BAD_REQUEST)
        data = query.validated_data
        if not Run.objects.filter(host_label=data["host"]).exists():
            return Response(
                {"host": [f"no run was measured on {data['host']!r}"]}, status=status.HTTP_404_NOT_FOUND
            )
        try:
            found = lab_fit(
                data["host"],
                data["engine"],
                data["server_version"],
                data["include_imported"],
                {name: data[name] for name, _ in SETTINGS if name in data},
            )
        except PlanRefused as refused:
            return Response(
                {"detail": refused.reason, "based_on_runs": refused.based_on_runs},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(
            {
                **found.as_dict(),
                "predictions": [found.fit.at(volume).as_dict() for volume in data.get("redo_bytes", [])],
            }
        )

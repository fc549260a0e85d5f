"""/api/series/: recurring series, their firings' points and change points; and
/api/change-points/{id}/, where a person triages one."""

from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from experiments import roles, schedule
from experiments.analysis.series import history
from experiments.api.common import PlainJSONParser
from experiments.definition import (
    CHECKED_BEYOND_SCHEMA,
    EXPERIMENT_NAME,
    DefinitionError,
    definition_json_schema,
)
from experiments.models import ChangePoint, Series, Triage
from experiments.services import series as series_service


class ChangePointSerializer(serializers.ModelSerializer):
    triaged_by = serializers.StringRelatedField()
    confirmed = serializers.BooleanField(
        read_only=True, help_text="enough firings on each side (3): only a confirmed change is alerted"
    )
    needs_more_firings = serializers.IntegerField(read_only=True)

    class Meta:
        model = ChangePoint
        fields = [
            "id",
            "series",
            "metric",
            "experiment",
            "firing_index",
            "before_median",
            "after_median",
            "ratio",
            "ratio_low",
            "ratio_high",
            "p_value",
            "worse",
            "differences",
            "firings_before",
            "firings_after",
            "firings_agreeing",
            "confirmed",
            "needs_more_firings",
            "triage",
            "note",
            "triaged_by",
            "triaged_at",
            "found_at",
        ]
        read_only_fields = fields


HIDDEN = "null unless you own the series or are an admin"
# A 400's body: each field's messages (a definition's fields as definition.FIELD).
ERRORS = OpenApiTypes.OBJECT


class SeriesSerializer(serializers.ModelSerializer):
    """Where alerts go (webhook URLs are bearer secrets for chat services, addresses are
    personal) only for the series' owner and admins; everyone sees the hosts they go to."""

    created_by = serializers.StringRelatedField()
    firings = serializers.IntegerField(source="firing_count", read_only=True)
    alert_emails = serializers.ListField(child=serializers.CharField(), allow_null=True, help_text=HIDDEN)
    alert_webhooks = serializers.ListField(child=serializers.CharField(), allow_null=True, help_text=HIDDEN)
    alert_destinations = serializers.SerializerMethodField()

    def get_alert_destinations(self, series) -> list[str]:
        """ "mail to example.com", "webhook to hooks.example.com": where, not to whom."""
        return series_service.alert_destinations(series)

    def to_representation(self, series):
        data = super().to_representation(series)
        request = self.context.get("request")
        if request is None or not roles.may_change(request.user, series):
            data["alert_emails"] = data["alert_webhooks"] = None
        return data

    class Meta:
        model = Series
        fields = [
            "id",
            "name",
            "schedule",
            "enabled",
            "next_firing_at",
            "alert_threshold",
            "alert_emails",
            "alert_webhooks",
            "alert_destinations",
            "firings",
            "last_error",
            "analysed_at",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class SeriesDetailSerializer(SeriesSerializer):
    points = serializers.SerializerMethodField()
    change_points = ChangePointSerializer(many=True, read_only=True)

    class Meta(SeriesSerializer.Meta):
        fields = [*SeriesSerializer.Meta.fields, "definition", "points", "change_points"]
        read_only_fields = fields

    def get_points(self, series) -> list[dict]:
        """One per firing, oldest first: its experiment, scheduled moment, builds, versions,
        hosts, each metric's median and the runs' values."""
        return [{**f.as_dict(), "index": i} for i, f in enumerate(history(series.pk), start=1)]


@extend_schema_field(definition_json_schema())
class DefinitionField(serializers.DictField):
    """A definition: its schema is the definition's own; validate_definition checks it (in the
    series service, which names its errors definition.FIELD)."""


# what the schema cannot say: the name is unique, a schedule's moments, a webhook's addresses,
# and the definition's own rules
SERIES_CHECKED_BEYOND_SCHEMA = [
    "name",
    "schedule",
    "alert_webhooks",
    *(f"definition.{path}" for path in CHECKED_BEYOND_SCHEMA),
]


class SeriesWriteSerializer(serializers.Serializer):
    """What POST and PATCH take, documented and checked alike: each field's shape here (the
    schema says what this says); what needs the database or a resolver (the hosts a definition
    names, a webhook's addresses, a cron expression's meaning) the service checks after."""

    name = serializers.RegexField(
        EXPERIMENT_NAME.pattern.replace("{1,200}", "{1,150}"),
        max_length=150,
        help_text="1-150 characters: letters, digits, spaces and _ . , : ( ) / + % = @ # - (a firing is "
        "named after it)",
    )
    definition = DefinitionField(help_text="An experiment definition, as POST /api/experiments/ takes.")
    schedule = serializers.CharField(
        max_length=schedule.MAX_LENGTH,
        help_text="Cron (minute hour day month weekday, UTC; a day of the month and a day of the week "
        "fire on either) or @hourly, @daily, @nightly, @weekly; at most every SERIES_MIN_INTERVAL_S",
    )
    enabled = serializers.BooleanField(required=False)
    alert_threshold = serializers.FloatField(
        required=False, min_value=0.001, max_value=10, help_text="0.1: alert on 10% worse."
    )
    alert_emails = serializers.ListField(
        child=serializers.EmailField(max_length=500), max_length=series_service.MAX_ADDRESSES, required=False
    )
    alert_webhooks = serializers.ListField(
        child=serializers.URLField(max_length=500),
        max_length=series_service.MAX_ADDRESSES,
        required=False,
        help_text="http(s) addresses that resolve to public addresses only (or hosts an admin allowed)",
    )


class SeriesViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Experimenters make series of their own; the owner or an admin changes one (PATCH: a new
    definition applies to the firings to come; a new schedule moves the next firing)."""

    queryset = (
        Series.objects.select_related("created_by")
        .prefetch_related("change_points__triaged_by")
        .annotate(firing_count=Count("firings"))
        .order_by("name")  # an aggregate drops Meta.ordering
    )
    http_method_names = ["get", "post", "patch", "head", "options"]
    # a definition is nested JSON, which a form cannot carry
    parser_classes = [PlainJSONParser]

    def get_serializer_class(self):
        return SeriesDetailSerializer if self.action == "retrieve" else SeriesSerializer

    @extend_schema(
        request=SeriesWriteSerializer,
        responses={201: SeriesDetailSerializer, 400: ERRORS},
        extensions={"x-checked-beyond-schema": SERIES_CHECKED_BEYOND_SCHEMA},
    )
    def create(self, request, *args, **kwargs):
        written = SeriesWriteSerializer(data=request.data)
        if not written.is_valid():
            return Response(written.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            series = series_service.create_series(request.data, user=request.user)
        except DefinitionError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(self._detail(series.pk), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=SeriesWriteSerializer,
        responses={200: SeriesDetailSerializer, 400: ERRORS},
        extensions={"x-checked-beyond-schema": SERIES_CHECKED_BEYOND_SCHEMA},
    )
    def partial_update(self, request, *args, **kwargs):
        series = self.get_object()
        roles.require_change(request.user, series)
        written = SeriesWriteSerializer(data=request.data, partial=True)
        if not written.is_valid():
            return Response(written.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            series = series_service.update_series(series.pk, request.data, user=request.user)
        except DefinitionError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(self._detail(series.pk))

    def _detail(self, series_id: int) -> dict:
        return SeriesDetailSerializer(
            self.get_queryset().get(pk=series_id), context=self.get_serializer_context()
        ).data


class TriageSerializer(serializers.Serializer):
    triage = serializers.ChoiceField(choices=Triage.choices)
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="why; needed when triage is expected or false_alarm",
    )


class ChangePointViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A change point; PATCH with `triage`: acknowledged, expected or false_alarm (each of these two
    with a `note` saying why), fixed, or new."""

    queryset = ChangePoint.objects.select_related("series", "triaged_by")
    serializer_class = ChangePointSerializer
    http_method_names = ["get", "patch", "head", "options"]

    @extend_schema(request=TriageSerializer, responses={200: ChangePointSerializer, 400: ERRORS})
    def partial_update(self, request, *args, **kwargs):
        point = self.get_object()
        roles.require_change(request.user, point.series)
        written = TriageSerializer(data=request.data)
        if not written.is_valid():
            return Response(written.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            point = series_service.triage_change_point(
                point.pk, request.data.get("triage"), request.data.get("note"), user=request.user
            )
        except DefinitionError as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(self.get_queryset().get(pk=point.pk)).data)

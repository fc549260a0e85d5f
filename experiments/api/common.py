"""What the API's resources share: CSV answers and annotations."""

from rest_framework import renderers, serializers, status
from rest_framework.response import Response

from experiments import roles, services


class CSVRenderer(renderers.BaseRenderer):
    """Lets `?format=csv` through DRF's negotiation; the views stream the CSV themselves."""

    media_type = "text/csv"
    format = "csv"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else str(data).encode()


def wants_csv(request) -> bool:
    return getattr(request.accepted_renderer, "format", None) == "csv"


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

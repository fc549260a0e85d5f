"""What the API's resources share: CSV answers and annotations."""

from rest_framework import renderers, serializers, status
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from experiments import roles, services


class CSVRenderer(renderers.BaseRenderer):
    """Lets `?format=csv` through DRF's negotiation; the views stream the CSV themselves."""

    media_type = "text/csv"
    format = "csv"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else str(data).encode()


class PlainJSONParser(JSONParser):
    """JSON bodies, with nesting too deep for Python's decoder (200 KB of "[") a 400 that says
    so, not a 500: a definition needs three levels (recovery_lab_cli/yaml_input.py)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deep: a definition needs three levels") from None


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

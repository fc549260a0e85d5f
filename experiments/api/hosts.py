"""/api/hosts/: benchmark hosts, their probes and the host keys an admin trusts."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from experiments import roles, services
from experiments.analysis import aa
from experiments.definition import HOST_NAME
from experiments.models import (
    Experiment,
    Host,
    Transport,
)
from experiments.services.hosts import SSH_HOST, SSH_USER, WORK_DIR, HostRejected
from experiments.services.ssh_keys import dashboard_public_key


class ProbeSerializer(serializers.Serializer):
    measure_disk = serializers.BooleanField(
        default=False, help_text="measure the work folder's disk with fio first (its floor)"
    )


# A probe an admin asked for, as the worker carries it out (services.request_probe): read only.
PROBE_FIELDS = (
    "probe_state",
    "probe_measure_disk",
    "probe_requested_at",
    "probe_outcome",
    "probe_failed",
    "probe_outcome_at",
)


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
            *PROBE_FIELDS,
        ]
        read_only_fields = [
            "facts",
            "last_seen",
            "last_error",
            "host_key_fingerprint",
            "offered_host_key_fingerprint",
            "active",
            "created_at",
            *PROBE_FIELDS,
        ]
        # each field's pattern, so the schema says what registration checks; registering a
        # name again updates that host (no uniqueness validator)
        extra_kwargs = {
            "name": {"validators": [RegexValidator(HOST_NAME)]},
            "ssh_user": {"validators": [RegexValidator(SSH_USER)]},
            "ssh_host": {"validators": [RegexValidator(SSH_HOST)]},
            "ssh_port": {"min_value": 1, "max_value": 65535},
            "work_dir": {"validators": [RegexValidator(WORK_DIR)]},
        }

    def get_status(self, host: Host) -> str:
        if not hasattr(host, "running_count"):  # just created or updated: nothing runs on it yet
            return host.status
        return host.current_status

    def get_public_key(self, host: Host) -> str:
        return dashboard_public_key() if host.transport == Transport.SSH else ""

    def create(self, validated_data):
        try:
            return services.register_host(**validated_data, user=self.context["request"].user)
        except HostRejected as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from None


class TrustHostKeySerializer(serializers.Serializer):
    fingerprint = serializers.RegexField(
        r"^SHA256:[A-Za-z0-9+/]{43}$",
        help_text="the host key's SHA256 fingerprint, as `ssh-keygen -lf` prints it on the host",
    )


class AACheckRequestSerializer(serializers.Serializer):
    experiment = serializers.IntegerField(
        min_value=1,
        max_value=2**63 - 1,
        help_text="the experiment whose definition is run twice, interleaved",
    )


class AAChecksSerializer(serializers.Serializer):
    spread = serializers.DictField(
        help_text="per metric: the ratio identical experiments differed by on this host (ratio), the A/A "
        "checks and pairs of identical experiments run apart it stands on (checks, apart_pairs, apart_bound)"
    )
    min_effect = serializers.DictField(
        help_text="per metric: the ratio a difference on this host must exceed"
    )
    checks = serializers.ListField(
        child=serializers.DictField(), help_text="the host's A/A checks, newest first"
    )


@extend_schema_view(
    # an ssh host needs its login and address; a local one neither
    create=extend_schema(extensions={"x-checked-beyond-schema": ["ssh_user", "ssh_host"]})
)
class HostViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = HostSerializer
    queryset = Host.objects.with_activity()
    permission_classes = [roles.AdminWrites]

    @extend_schema(request=ProbeSerializer, responses={202: HostSerializer, 409: None})
    @action(detail=True, methods=["post"])
    def probe(self, request, pk=None):
        """Queue a probe for the worker (202, the host with probe_state `queued`); 409 while one is
        queued or running. The probe connects and reads the host's facts over its confirmed key;
        a host with no confirmed key is only asked for the key it offers (status unverified,
        offered_host_key_fingerprint). `measure_disk`: first measure its work folder's disk with
        fio (about 12 s), the floor its recoveries are set against (facts.disk.floor). When it
        ends, probe_state is empty and probe_outcome says what it found (probe_failed if it
        could not); GET the host to follow it."""
        body = ProbeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            host = services.request_probe(self.get_object().pk, body.validated_data["measure_disk"])
        except services.ProbeBusy as exc:
            return Response({"detail": str(exc)}, status=409)
        return Response(HostSerializer(host, context={"request": request}).data, status=202)

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

    @extend_schema(methods=["GET"], request=None, responses={200: AAChecksSerializer})
    @extend_schema(
        methods=["POST"],
        request=AACheckRequestSerializer,
        responses={201: AAChecksSerializer},
        extensions={"x-checked-beyond-schema": ["experiment", "hosts", "repetitions", "non_field_errors"]},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="aa-checks",
        permission_classes=[roles.ExperimenterWrites],
    )
    def aa_checks(self, request, pk=None):
        """GET: the host's A/A checks (each cell's copy B over copy A) and its A/A spread, the
        floor a difference on it must clear. POST (experimenters): start an A/A check, the
        experiment's definition on this host alone, run twice, interleaved."""
        host = self.get_object()
        status = 200
        if request.method == "POST":
            body = AACheckRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            try:
                services.start_aa_check(host.name, body.validated_data["experiment"], request.user)
            except Experiment.DoesNotExist:
                raise serializers.ValidationError({"experiment": ["no such experiment"]}) from None
            except services.DefinitionError as exc:
                raise serializers.ValidationError(exc.errors) from None
            status = 201
        return Response(aa_answer(host.name), status=status)


def aa_answer(host: str) -> dict:
    """A host's A/A checks, its spread and the floor per metric (the API and the hosts page)."""
    spreads = aa.host_spreads({host})
    return {
        "spread": spreads.get(host, {}),
        "min_effect": {metric: aa.floor({host}, metric, spreads) for metric in aa.AA_METRICS},
        "checks": aa.host_checks({host}).get(host, []),
    }

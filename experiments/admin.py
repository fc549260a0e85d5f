from django.contrib import admin

from experiments.models import ApiToken, Experiment, Host, Run, RunFile, Series


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ["name", "transport", "ssh_host", "active"]


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "status", "created_by", "created_at"]
    list_filter = ["status"]


@admin.register(Series)
class SeriesAdmin(admin.ModelAdmin):
    """Read and delete here; a series is changed on its page (/series/ID/edit/: its definition is
    checked there as everywhere), or through PATCH /api/series/ID/."""

    list_display = ["name", "schedule", "enabled", "next_firing_at", "created_by"]
    list_filter = ["enabled"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Series._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Admins read and delete runs here; nothing measured is edited by hand (exclusion, with its
    reason, is on the run's page)."""

    list_display = ["id", "experiment", "host_label", "engine", "status", "recovery_seconds", "redo_bytes"]
    list_filter = ["status", "engine", "host_label"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Run._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(RunFile)
class RunFileAdmin(admin.ModelAdmin):
    list_display = ["run", "name", "size_bytes", "truncated"]
    exclude = ["content"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in RunFile._meta.fields if f.name != "content"]

    def has_add_permission(self, request):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Admins see whose tokens exist, when each expires and was last used, and change an expiry
    or delete a token; a key is never shown here (only its digest is stored). Users make their own
    on /account/token/, scripts' with `manage.py drf_create_token`."""

    list_display = ["user", "token_key", "created", "expiry", "last_used_at"]
    search_fields = ["user__username", "token_key"]
    fields = ["user", "token_key", "created", "expiry", "last_used_at"]

    def get_readonly_fields(self, request, obj=None):
        return ["user", "token_key", "created", "last_used_at"]

    def has_add_permission(self, request):
        return False

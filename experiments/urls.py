from django.urls import path

from experiments.pages.account import account_token
from experiments.pages.analysis import (
    compare_page,
    compare_report,
    compare_report_pdf,
    explore_page,
    planner_page,
    planner_report,
    planner_report_pdf,
)
from experiments.pages.experiments import (
    experiment_annotate,
    experiment_cancel,
    experiment_definition_yaml,
    experiment_detail,
    experiment_import,
    experiment_list,
    experiment_live,
    experiment_new,
    experiment_report,
    experiment_report_pdf,
)
from experiments.pages.hosts import host_aa_check, host_list, host_measure, host_probe, host_trust_key
from experiments.pages.imports import import_list, import_new
from experiments.pages.runs import (
    run_annotate,
    run_cancel,
    run_detail,
    run_exclude,
    run_file,
    run_file_download,
    run_include,
    run_live,
    run_reparse,
)
from experiments.pages.series import change_point_triage, series_detail, series_from_experiment, series_list
from experiments.pages.series_controls import series_delete, series_edit, series_fire, series_pause

urlpatterns = [
    path("account/token/", account_token, name="account-token"),
    path("experiments/", experiment_list, name="experiment-list"),
    path("experiments/new/", experiment_new, name="experiment-new"),
    path("experiments/import/", experiment_import, name="experiment-import"),
    path("experiments/<int:pk>/", experiment_detail, name="experiment-detail"),
    path("experiments/<int:pk>/report/", experiment_report, name="experiment-report"),
    path(
        "experiments/<int:pk>/definition.yaml", experiment_definition_yaml, name="experiment-definition-yaml"
    ),
    path("experiments/<int:pk>/report.pdf", experiment_report_pdf, name="experiment-report-pdf"),
    path("experiments/<int:pk>/live/", experiment_live, name="experiment-live"),
    path("experiments/<int:pk>/cancel/", experiment_cancel, name="experiment-cancel"),
    path("experiments/<int:pk>/annotate/", experiment_annotate, name="experiment-annotate"),
    path("runs/<int:pk>/", run_detail, name="run-detail"),
    path("runs/<int:pk>/annotate/", run_annotate, name="run-annotate"),
    path("runs/<int:pk>/live/", run_live, name="run-live"),
    path("runs/<int:pk>/exclude/", run_exclude, name="run-exclude"),
    path("runs/<int:pk>/cancel/", run_cancel, name="run-cancel"),
    path("runs/<int:pk>/include/", run_include, name="run-include"),
    path("explore/", explore_page, name="explore"),
    path("compare/", compare_page, name="compare"),
    path("compare/report/", compare_report, name="compare-report"),
    path("compare/report.pdf", compare_report_pdf, name="compare-report-pdf"),
    path("planner/", planner_page, name="planner"),
    path("planner/report/", planner_report, name="planner-report"),
    path("planner/report.pdf", planner_report_pdf, name="planner-report-pdf"),
    path("runs/<int:pk>/files/<str:name>", run_file, name="run-file"),
    path("runs/<int:pk>/files/<str:name>/download", run_file_download, name="run-file-download"),
    path("runs/<int:pk>/reparse/", run_reparse, name="run-reparse"),
    path("hosts/", host_list, name="host-list"),
    path("hosts/<int:pk>/probe/", host_probe, name="host-probe"),
    path("hosts/<int:pk>/measure/", host_measure, name="host-measure"),
    path("hosts/<int:pk>/aa-check/", host_aa_check, name="host-aa-check"),
    path("hosts/<int:pk>/trust-key/", host_trust_key, name="host-trust-key"),
    path("imports/", import_list, name="import-list"),
    path("imports/new/", import_new, name="import-new"),
    path("series/", series_list, name="series-list"),
    path("series/<int:pk>/", series_detail, name="series-detail"),
    path("series/<int:pk>/edit/", series_edit, name="series-edit"),
    path("series/<int:pk>/pause/", series_pause, name="series-pause"),
    path("series/<int:pk>/fire/", series_fire, name="series-fire"),
    path("series/<int:pk>/delete/", series_delete, name="series-delete"),
    path("change-points/<int:pk>/triage/", change_point_triage, name="change-point-triage"),
    path("experiments/<int:pk>/repeat/", series_from_experiment, name="series-from-experiment"),
]

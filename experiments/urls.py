from django.urls import path

from . import views

urlpatterns = [
    path("experiments/", views.experiment_list, name="experiment-list"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/import/", views.experiment_import, name="experiment-import"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment-detail"),
    path("experiments/<int:pk>/report/", views.experiment_report, name="experiment-report"),
    path("experiments/<int:pk>/report.pdf", views.experiment_report_pdf, name="experiment-report-pdf"),
    path("experiments/<int:pk>/live/", views.experiment_live, name="experiment-live"),
    path("experiments/<int:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
    path("experiments/<int:pk>/annotate/", views.experiment_annotate, name="experiment-annotate"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/annotate/", views.run_annotate, name="run-annotate"),
    path("runs/<int:pk>/live/", views.run_live, name="run-live"),
    path("runs/<int:pk>/exclude/", views.run_exclude, name="run-exclude"),
    path("runs/<int:pk>/include/", views.run_include, name="run-include"),
    path("explore/", views.explore_page, name="explore"),
    path("compare/", views.compare_page, name="compare"),
    path("compare/report/", views.compare_report, name="compare-report"),
    path("compare/report.pdf", views.compare_report_pdf, name="compare-report-pdf"),
    path("planner/", views.planner_page, name="planner"),
    path("runs/<int:pk>/files/<str:name>", views.run_file, name="run-file"),
    path("runs/<int:pk>/reparse/", views.run_reparse, name="run-reparse"),
    path("hosts/", views.host_list, name="host-list"),
    path("hosts/<int:pk>/probe/", views.host_probe, name="host-probe"),
    path("hosts/<int:pk>/trust-key/", views.host_trust_key, name="host-trust-key"),
    path("imports/new/", views.import_new, name="import-new"),
]

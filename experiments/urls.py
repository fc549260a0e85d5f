from django.urls import path

from . import views

urlpatterns = [
    path("experiments/", views.experiment_list, name="experiment-list"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment-detail"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/files/<str:name>", views.run_file, name="run-file"),
    path("runs/<int:pk>/reparse/", views.run_reparse, name="run-reparse"),
    path("hosts/", views.host_list, name="host-list"),
    path("imports/new/", views.import_new, name="import-new"),
]

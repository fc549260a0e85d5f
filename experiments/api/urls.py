"""The API's routes, under /api/ (webapp/urls.py)."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from experiments.api.analysis import CompareView, ExploreView, PlannerView
from experiments.api.experiments import ExperimentViewSet
from experiments.api.hosts import HostViewSet
from experiments.api.imports import ImportView
from experiments.api.predict import PredictView
from experiments.api.runs import RunViewSet
from experiments.api.series import ChangePointViewSet, SeriesViewSet

router = DefaultRouter()
router.register("experiments", ExperimentViewSet, basename="api-experiment")
router.register("runs", RunViewSet, basename="api-run")
router.register("hosts", HostViewSet, basename="api-host")
router.register("series", SeriesViewSet, basename="api-series")
router.register("change-points", ChangePointViewSet, basename="api-change-point")

urlpatterns = [
    path("imports/", ImportView.as_view(), name="api-import"),
    path("explore/", ExploreView.as_view(), name="api-explore"),
    path("compare/", CompareView.as_view(), name="api-compare"),
    path("planner/", PlannerView.as_view(), name="api-planner"),
    path("predict/", PredictView.as_view(), name="api-predict"),
    path("", include(router.urls)),
]

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from experiments import api

router = DefaultRouter()
router.register("experiments", api.ExperimentViewSet, basename="api-experiment")
router.register("runs", api.RunViewSet, basename="api-run")
router.register("hosts", api.HostViewSet, basename="api-host")

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="experiment-list", permanent=False)),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/imports/", api.ImportView.as_view(), name="api-import"),
    path("api/explore/", api.ExploreView.as_view(), name="api-explore"),
    path("api/compare/", api.CompareView.as_view(), name="api-compare"),
    path("api/planner/", api.PlannerView.as_view(), name="api-planner"),
    path("api/", include(router.urls)),
    path("", include("experiments.urls")),
]

from django.urls import path

from memdash.snapshots import views

app_name = "snapshots"

urlpatterns = [
    path("apps/<int:app_id>/", views.app_detail, name="app_detail"),
    path("apps/<int:app_id>/builds/<int:build_id>/", views.build_detail, name="build_detail"),
    path("snapshots/<int:snapshot_id>/", views.snapshot_detail, name="snapshot_detail"),
    path("api/v1/apps/<int:app_id>/builds", views.api_builds, name="api_builds"),
    path(
        "api/v1/apps/<int:app_id>/builds/<int:build_id>/statistics",
        views.api_build_statistics,
        name="api_build_statistics",
    ),
    path("api/v1/snapshots/<int:snapshot_id>", views.api_snapshot, name="api_snapshot"),
    path(
        "api/v1/snapshots/<int:snapshot_id>/statistics",
        views.api_statistics,
        name="api_statistics",
    ),
    # --- call trees and generations (views_calltree) ---
]

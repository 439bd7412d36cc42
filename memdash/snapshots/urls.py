from django.urls import path

from memdash.snapshots import views, views_calltree

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
    path(
        "snapshots/<int:snapshot_id>/calltree/",
        views_calltree.calltree_page,
        name="calltree",
    ),
    path(
        "snapshots/<int:snapshot_id>/generations/",
        views_calltree.generations_page,
        name="generations",
    ),
    path(
        "apps/<int:app_id>/builds/<int:build_id>/calltree/",
        views_calltree.build_calltree_page,
        name="build_calltree",
    ),
    path(
        "api/v1/snapshots/<int:snapshot_id>/calltree",
        views_calltree.api_calltree,
        name="api_calltree",
    ),
    path(
        "api/v1/snapshots/<int:snapshot_id>/generations",
        views_calltree.api_generations,
        name="api_generations",
    ),
    path(
        "api/v1/apps/<int:app_id>/builds/<int:build_id>/calltree",
        views_calltree.api_build_calltree,
        name="api_build_calltree",
    ),
    # --- end of call trees and generations ---
]

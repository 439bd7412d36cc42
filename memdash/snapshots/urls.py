from django.urls import path

from memdash.snapshots.web import (
    allocations as views_list,
)
from memdash.snapshots.web import (
    calltree as views_calltree,
)
from memdash.snapshots.web import (
    debug_files as views_symbols,
)
from memdash.snapshots.web import (
    export as views_export,
)
from memdash.snapshots.web import (
    flame as views_flame,
)
from memdash.snapshots.web import (
    views,
)

app_name = "snapshots"

urlpatterns = [
    path("apps/<id:app_id>/", views.app_detail, name="app_detail"),
    path("apps/<id:app_id>/builds/<id:build_id>/", views.build_detail, name="build_detail"),
    path("snapshots/<id:snapshot_id>/", views.snapshot_detail, name="snapshot_detail"),
    path("api/v1/apps/<id:app_id>/builds", views.api_builds, name="api_builds"),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/statistics",
        views.api_build_statistics,
        name="api_build_statistics",
    ),
    path("api/v1/snapshots/<id:snapshot_id>", views.api_snapshot, name="api_snapshot"),
    path(
        "api/v1/snapshots/<id:snapshot_id>/statistics",
        views.api_statistics,
        name="api_statistics",
    ),
    # --- the Allocations List and the stack of a row (views_list) ---
    path(
        "snapshots/<id:snapshot_id>/allocations/",
        views_list.snapshot_allocations,
        name="allocations",
    ),
    path(
        "apps/<id:app_id>/builds/<id:build_id>/allocations/",
        views_list.build_allocations,
        name="build_allocations",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/allocations",
        views_list.api_snapshot_allocations,
        name="api_allocations",
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/allocations",
        views_list.api_build_allocations,
        name="api_build_allocations",
    ),
    path("api/v1/snapshots/<id:snapshot_id>/stack", views_list.api_stack, name="api_stack"),
    # --- call trees and generations (views_calltree) ---
    path(
        "snapshots/<id:snapshot_id>/calltree/",
        views_calltree.calltree_page,
        name="calltree",
    ),
    path(
        "snapshots/<id:snapshot_id>/generations/",
        views_calltree.generations_page,
        name="generations",
    ),
    path(
        "snapshots/<id:snapshot_id>/generations/export.csv",
        views_export.generations_csv,
        name="generations_csv",
    ),
    path(
        "apps/<id:app_id>/builds/<id:build_id>/calltree/",
        views_calltree.build_calltree_page,
        name="build_calltree",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/calltree",
        views_calltree.api_calltree,
        name="api_calltree",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/generations",
        views_calltree.api_generations,
        name="api_generations",
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/calltree",
        views_calltree.api_build_calltree,
        name="api_build_calltree",
    ),
    # --- flame graphs and Top Functions of call trees (views_flame) ---
    path(
        "api/v1/snapshots/<id:snapshot_id>/calltree/flame", views_flame.api_flame, name="api_flame"
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/calltree/flame",
        views_flame.api_build_flame,
        name="api_build_flame",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/calltree/functions",
        views_flame.api_functions,
        name="api_functions",
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/calltree/functions",
        views_flame.api_build_functions,
        name="api_build_functions",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/calltree/sandwich",
        views_flame.api_sandwich,
        name="api_sandwich",
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/calltree/sandwich",
        views_flame.api_build_sandwich,
        name="api_build_sandwich",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/calltree/sandwich.csv",
        views_flame.api_sandwich_csv,
        name="api_sandwich_csv",
    ),
    path(
        "api/v1/apps/<id:app_id>/builds/<id:build_id>/calltree/sandwich.csv",
        views_flame.api_build_sandwich_csv,
        name="api_build_sandwich_csv",
    ),
    path(
        "snapshots/<id:snapshot_id>/calltree/functions.csv",
        views_flame.functions_csv,
        name="functions_csv",
    ),
    path(
        "apps/<id:app_id>/builds/<id:build_id>/calltree/functions.csv",
        views_flame.build_functions_csv,
        name="build_functions_csv",
    ),
    # --- end of call trees and generations ---
    # --- names: debug files and what is missing (views_symbols) ---
    path("apps/<id:app_id>/debug-files/", views_symbols.debug_files, name="debug_files"),
    path("snapshots/<id:snapshot_id>/symbols/", views_symbols.snapshot_symbols, name="symbols"),
    path(
        "apps/<id:app_id>/builds/<id:build_id>/symbols/",
        views_symbols.build_symbols,
        name="build_symbols",
    ),
    path(
        "api/v1/snapshots/<id:snapshot_id>/symbols",
        views_symbols.api_snapshot_symbols,
        name="api_snapshot_symbols",
    ),
    path(
        "api/v1/apps/<id:app_id>/debug-files/list",
        views_symbols.api_debug_files,
        name="api_debug_file_list",
    ),
]

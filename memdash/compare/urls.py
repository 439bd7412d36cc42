from django.urls import path

from memdash.compare.web import api, views

app_name = "compare"

urlpatterns = [
    path("apps/<id:app_id>/trends/", views.trends, name="trends"),
    path("apps/<id:app_id>/compare/", views.build_compare, name="build_compare"),
    path("apps/<id:app_id>/snapshot-diff/", views.snapshot_diff, name="snapshot_diff"),
    path(
        "apps/<id:app_id>/snapshots/<id:snapshot_id>/generation-diff/",
        views.generation_diff,
        name="generation_diff",
    ),
    path("api/v1/diff", api.api_diff, name="api_diff"),
    path("api/v1/diff/calltree", api.api_diff_calltree, name="api_diff_calltree"),
    path("api/v1/diff/flame", api.api_diff_flame, name="api_diff_flame"),
    path("api/v1/apps/<id:app_id>/compare", api.api_compare, name="api_compare"),
]

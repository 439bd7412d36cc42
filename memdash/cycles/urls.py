from django.urls import path

from memdash.cycles.web import api, views

app_name = "cycles"

urlpatterns = [
    path("apps/<id:app_id>/cycles/", views.cluster_list, name="cluster_list"),
    path("apps/<id:app_id>/cycles/<id:cluster_id>/", views.cluster_detail, name="cluster_detail"),
    path("apps/<id:app_id>/cycles/settings/", views.cycle_settings, name="settings"),
    path("api/v1/apps/<id:app_id>/cycles", api.api_clusters, name="api_clusters"),
    path("api/v1/cycles/<id:cluster_id>", api.api_cluster, name="api_cluster"),
    path(
        "api/v1/cycles/<id:cluster_id>/link-to-weaken",
        api.api_cluster_link_to_weaken,
        name="api_cluster_link_to_weaken",
    ),
]

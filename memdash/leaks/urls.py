from django.urls import path

from memdash.leaks.web import api, trace_api, traces, views

app_name = "leaks"

urlpatterns = [
    path("apps/<id:app_id>/leaks/", views.group_list, name="group_list"),
    path("apps/<id:app_id>/leaks/<id:group_id>/", views.group_detail, name="group_detail"),
    path(
        "apps/<id:app_id>/leaks/reports/<id:report_id>/",
        views.report_detail,
        name="report_detail",
    ),
    path("apps/<id:app_id>/leaks/leakcanary/", traces.trace_list, name="trace_list"),
    path(
        "apps/<id:app_id>/leaks/leakcanary/<id:cluster_id>/",
        traces.trace_detail,
        name="trace_detail",
    ),
    path(
        "apps/<id:app_id>/leaks/leakcanary/analyses/<id:analysis_id>/",
        traces.trace_analysis,
        name="trace_analysis",
    ),
    path("api/v1/apps/<id:app_id>/leaks", api.api_app_leaks, name="api_app_leaks"),
    path(
        "api/v1/apps/<id:app_id>/leakcanary",
        trace_api.api_app_leakcanary,
        name="api_app_leakcanary",
    ),
    path(
        "api/v1/leakcanary/<id:cluster_id>",
        trace_api.api_leakcanary_cluster,
        name="api_leakcanary_cluster",
    ),
    path("api/v1/leaks/<id:group_id>", api.api_leak_group, name="api_leak_group"),
]

from django.urls import path

from memdash.leaks.web import api, views

app_name = "leaks"

urlpatterns = [
    path("apps/<int:app_id>/leaks/", views.group_list, name="group_list"),
    path("apps/<int:app_id>/leaks/<int:group_id>/", views.group_detail, name="group_detail"),
    path(
        "apps/<int:app_id>/leaks/reports/<int:report_id>/",
        views.report_detail,
        name="report_detail",
    ),
    path("api/v1/apps/<int:app_id>/leaks", api.api_app_leaks, name="api_app_leaks"),
    path("api/v1/leaks/<int:group_id>", api.api_leak_group, name="api_leak_group"),
]

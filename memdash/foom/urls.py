from django.urls import path

from memdash.foom.web import diagnostics as diagnostic_views
from memdash.foom.web import exits as exit_views
from memdash.foom.web import views

app_name = "foom"

urlpatterns = [
    path("apps/<id:app_id>/foom/", views.app_foom, name="app_foom"),
    path("apps/<id:app_id>/foom/builds/<id:build_id>/", views.build_foom, name="build_foom"),
    path(
        "apps/<id:app_id>/foom/sessions/<id:session_pk>/",
        views.session_detail,
        name="session_detail",
    ),
    path(
        "apps/<id:app_id>/foom/runs/<path:session_id>/",
        views.session_by_id,
        name="session_by_id",
    ),
    path("apps/<id:app_id>/foom/os/", exit_views.os_exits, name="os_exits"),
    path(
        "apps/<id:app_id>/foom/os/diagnostics/<id:diagnostic_id>/",
        diagnostic_views.diagnostic_detail,
        name="diagnostic",
    ),
    path("api/v1/apps/<id:app_id>/foom", views.api_app_foom, name="api_app_foom"),
    path("api/v1/apps/<id:app_id>/foom/os", exit_views.api_os_exits, name="api_os_exits"),
    path("api/v1/sessions/<str:session_ref>", views.api_session, name="api_session"),
]

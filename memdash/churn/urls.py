from django.urls import path

from memdash.churn.web import api, views
from memdash.churn.web import runs as run_views

app_name = "churn"

urlpatterns = [
    path("apps/<id:app_id>/churn/", views.app_churn, name="app_churn"),
    path(
        "apps/<id:app_id>/churn/scenarios/<id:scenario_id>/",
        run_views.scenario_runs,
        name="scenario_runs",
    ),
    path("apps/<id:app_id>/settings/churn/", views.churn_settings, name="settings"),
    path("api/v1/apps/<id:app_id>/churn", api.api_app_churn, name="api_app_churn"),
]

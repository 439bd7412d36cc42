from django.urls import path

from memdash.alerts.web import api, views

app_name = "alerts"

urlpatterns = [
    path("apps/<id:app_id>/alerts/", views.app_alerts, name="app_alerts"),
    path("apps/<id:app_id>/settings/alerts/rules/", views.rule_create, name="rule_create"),
    path(
        "apps/<id:app_id>/settings/alerts/rules/<id:rule_id>/delete/",
        views.rule_delete,
        name="rule_delete",
    ),
    path(
        "apps/<id:app_id>/settings/alerts/rules/<id:rule_id>/toggle/",
        views.rule_toggle,
        name="rule_toggle",
    ),
    path(
        "apps/<id:app_id>/settings/alerts/destinations/",
        views.destination_create,
        name="destination_create",
    ),
    path(
        "apps/<id:app_id>/settings/alerts/destinations/<id:destination_id>/delete/",
        views.destination_delete,
        name="destination_delete",
    ),
    path("api/v1/apps/<id:app_id>/alert-rules", api.api_alert_rules, name="api_rules"),
    path("api/v1/apps/<id:app_id>/alert-rules/<id:rule_id>", api.api_alert_rule, name="api_rule"),
    path(
        "api/v1/apps/<id:app_id>/alert-destinations",
        api.api_alert_destinations,
        name="api_destinations",
    ),
    path(
        "api/v1/apps/<id:app_id>/alert-destinations/<id:destination_id>",
        api.api_alert_destination,
        name="api_destination",
    ),
    path("api/v1/apps/<id:app_id>/alerts", api.api_alerts, name="api_alerts"),
]

from django.urls import path

from memdash.core import views

app_name = "core"

urlpatterns = [
    path("", views.app_list, name="app_list"),
    path("apps/<int:app_id>/settings/", views.app_settings, name="app_settings"),
    path("apps/<int:app_id>/settings/keys/", views.ingest_key_create, name="key_create"),
    path(
        "apps/<int:app_id>/settings/keys/<int:key_id>/revoke/",
        views.ingest_key_revoke,
        name="key_revoke",
    ),
    path("apps/<int:app_id>/settings/members/", views.member_add, name="member_add"),
    path("apps/<int:app_id>/settings/churn/", views.churn_settings, name="churn_settings"),
    path("tokens/", views.tokens, name="tokens"),
    path("api/v1/apps", views.api_apps, name="api_apps"),
]

from django.urls import path

from memdash.core.web import views

app_name = "core"

urlpatterns = [
    path("", views.app_list, name="app_list"),
    path("tokens/", views.tokens, name="tokens"),
    path("invitations/<id:invitation_id>/", views.invitation_answer, name="invitation_answer"),
    path("api/v1/apps", views.api_apps, name="api_apps"),
]

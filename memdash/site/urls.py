from importlib.util import find_spec
from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memdash.floors import APPS
from memdash.site.web import views

handler404 = "memdash.core.web.http.not_found"  # JSON under /api/

# Every app's own URLs (`memdash/<app>/urls.py`), floor by floor; the site's are below.
DOMAINS = [app for app in APPS if app != "site" and find_spec(f"memdash.{app}.urls") is not None]


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for on pages that name no icon (the API's JSON, the
    admin): the site's icon in the static files. Not permanent: its URL has a hash in production."""

    permanent = False

    def get_redirect_url(self, *args: Any, **kwargs: Any) -> str:
        return static("favicon.svg")


SITE_PATTERNS = [
    path("apps/<id:app_id>/settings/", views.app_settings, name="app_settings"),
    path("apps/<id:app_id>/settings/tracker/", views.tracker_settings, name="tracker_settings"),
    path("apps/<id:app_id>/settings/keys/", views.ingest_key_create, name="key_create"),
    path(
        "apps/<id:app_id>/settings/keys/<id:key_id>/revoke/",
        views.ingest_key_revoke,
        name="key_revoke",
    ),
    path("apps/<id:app_id>/settings/members/", views.member_invite, name="member_invite"),
    path(
        "apps/<id:app_id>/settings/members/<id:membership_id>/role/",
        views.member_role,
        name="member_role",
    ),
    path(
        "apps/<id:app_id>/settings/members/<id:membership_id>/remove/",
        views.member_remove,
        name="member_remove",
    ),
    path(
        "apps/<id:app_id>/settings/invitations/<id:invitation_id>/cancel/",
        views.invitation_cancel,
        name="invitation_cancel",
    ),
]

urlpatterns = [
    path("favicon.ico", FaviconView.as_view(), name="favicon"),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"
    ),
    path("", include((SITE_PATTERNS, "site"))),
    *[path("", include(f"memdash.{domain}.urls")) for domain in DOMAINS],
]

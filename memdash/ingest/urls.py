from django.urls import path

from memdash.ingest.web import views
from memdash.symbols.web import upload as debug_files

app_name = "ingest"

urlpatterns = [
    path("api/v1/uploads", views.api_upload_create, name="api_upload_create"),
    path("api/v1/uploads/<int:upload_id>", views.api_upload_detail, name="api_upload_detail"),
    path("uploads/", views.upload_list, name="all_uploads"),
    path("apps/<int:app_id>/uploads/", views.upload_list, name="upload_list"),
    path("uploads/<int:upload_id>/", views.upload_detail, name="upload_detail"),
    path(
        "api/v1/apps/<int:app_id>/debug-files",
        debug_files.api_debug_files,
        name="api_debug_files",
    ),
]

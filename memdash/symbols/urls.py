from django.urls import path

from memdash.symbols.web import upload

app_name = "symbols"

urlpatterns = [
    path("api/v1/apps/<int:app_id>/debug-files", upload.api_debug_files, name="api_debug_files"),
    path(
        "api/v1/apps/<int:app_id>/debug-files/uploads/<int:upload_id>",
        upload.api_debug_files_upload,
        name="api_debug_files_upload",
    ),
]

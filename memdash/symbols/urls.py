from django.urls import path

from memdash.symbols.web import upload

app_name = "symbols"

urlpatterns = [
    path("api/v1/apps/<id:app_id>/debug-files", upload.api_debug_files, name="api_debug_files"),
    path(
        "api/v1/apps/<id:app_id>/debug-files/uploads/<id:upload_id>",
        upload.api_debug_files_upload,
        name="api_debug_files_upload",
    ),
]

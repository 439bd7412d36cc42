from django.urls import path

from memdash.ingest.web import views

app_name = "ingest"

urlpatterns = [
    path("api/v1/uploads", views.api_upload_create, name="api_upload_create"),
    path("api/v1/uploads/<id:upload_id>", views.api_upload_detail, name="api_upload_detail"),
    path("uploads/", views.upload_list, name="all_uploads"),
    path("apps/<id:app_id>/uploads/", views.upload_list, name="upload_list"),
    path("uploads/<id:upload_id>/", views.upload_detail, name="upload_detail"),
]

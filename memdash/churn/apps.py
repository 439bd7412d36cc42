from django.apps import AppConfig


class ChurnConfig(AppConfig):
    name = "memdash.churn"
    label = "churn"

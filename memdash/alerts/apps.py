from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "memdash.alerts"
    label = "alerts"
    verbose_name = "Alerts"

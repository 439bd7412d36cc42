"""The lenses' settings left `core.App` for their own models: the migrations carry the values."""

from __future__ import annotations

import pytest

from tests.migrations import latest, migrate

pytestmark = pytest.mark.slow  # migrations back and forth

BEFORE = [
    ("core", "0001_initial"),
    ("cycles", "0002_cluster_list_index"),
    ("churn", "0001_initial"),
]
AFTER = [
    ("core", "0002_lens_settings_moved"),
    ("cycles", "0003_settings_from_core"),
    ("churn", "0002_settings_from_core"),
]


@pytest.mark.django_db(transaction=True)
def test_settings_are_copied_to_the_lenses_and_back():
    old = migrate(BEFORE)
    App = old.get_model("core", "App")
    custom = App.objects.create(
        bundle_id="com.example.custom", platform="ios", system_prefixes=["NS", "MD"],
        churn_weights={"realloc": 5}, churn_threshold_percent=7.5,
    )  # fmt: skip
    plain = App.objects.create(bundle_id="com.example.plain", platform="ios")
    try:
        new = migrate(AFTER)
        cycles = new.get_model("cycles", "CycleSettings").objects
        churn = new.get_model("churn", "ChurnSettings").objects
        assert cycles.get(app_id=custom.pk).system_prefixes == ["NS", "MD"]
        moved = churn.get(app_id=custom.pk)
        assert (moved.weights, moved.threshold_percent) == ({"realloc": 5}, 7.5)
        assert not cycles.filter(app_id=plain.pk).exists()  # the defaults: nothing to store
        assert not churn.filter(app_id=plain.pk).exists()
        back = migrate(BEFORE).get_model("core", "App").objects.get(pk=custom.pk)
        assert (back.system_prefixes, back.churn_weights, back.churn_threshold_percent) == (
            ["NS", "MD"], {"realloc": 5}, 7.5,
        )  # fmt: skip
    finally:  # the rest of the suite runs on the latest schema
        migrate(AFTER).get_model("core", "App").objects.filter(
            pk__in=[custom.pk, plain.pk]
        ).delete()
        # BEFORE also unapplied the migrations that depend on core 0002 (symbols, allocations,
        # ingest, foom, leaks): apply every app's latest again.
        migrate(latest())

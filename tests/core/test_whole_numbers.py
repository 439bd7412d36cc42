"""Whole-number query parameters (core.web.api.parse_int): what the OpenAPI schema declares an
integer to be, and nothing else Python's int() would take."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from rest_framework.exceptions import ValidationError

from memdash.core.web.api import parse_int


@pytest.mark.parametrize(("text", "number"), [("5", 5), ("-3", -3), ("0", 0), ("0100", 100)])
def test_decimal_digits_are_read(text, number):
    assert parse_int(QueryDict(f"n={text}"), "n", 7, -10, 1000) == number


def test_absent_or_empty_is_the_default():
    assert parse_int(QueryDict(""), "n", 7, 0, 10) == 7
    assert parse_int(QueryDict("n="), "n", 7, 0, 10) == 7


# " 5", "5 ", "5_0", "+5", Arabic-Indic five, fullwidth five, "5.0": int() takes the first five
@pytest.mark.parametrize("text", [" 5", "5 ", "5_0", "+5", "\u0665", "\uff15", "5.0", "0x5"])
def test_anything_but_decimal_digits_is_refused_naming_the_parameter(text):
    params = QueryDict(mutable=True)
    params["n"] = text
    with pytest.raises(ValidationError) as refused:
        parse_int(params, "n", 7, 0, 1000)
    assert refused.value.detail == {"n": "must be an integer"}


def test_out_of_range_is_refused_with_the_range():
    with pytest.raises(ValidationError) as refused:
        parse_int(QueryDict("n=11"), "n", 7, 0, 10)
    assert refused.value.detail == {"n": "must be between 0 and 10"}

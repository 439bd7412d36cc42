"""One pagination include for every list: it keeps the query string, names its parameter, and
says which rows a page holds when given a noun."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.test import RequestFactory


def render(query: str, **context) -> str:
    request = RequestFactory().get("/list/" + query)
    return render_to_string("core/pagination.html", {"request": request, **context})


def test_links_keep_the_filters_and_change_only_the_page():
    page = Paginator(list(range(1200)), 500).page(2)  # rows 501–1000 of 1,200
    html = render("?q=Cell&sort=category&page=2", page=page, noun="categories")
    assert 'href="?q=Cell&amp;sort=category&amp;page=1"' in html
    assert 'href="?q=Cell&amp;sort=category&amp;page=3"' in html
    assert "categories 501–1,000 of 1,200" in html


def test_a_second_list_on_a_page_has_its_own_parameter():
    page = Paginator(list(range(30)), 10).page(1)
    html = render("?page=4", page=page, param="spage", next_label="older →")
    assert 'href="?page=4&amp;spage=2"' in html
    assert "older →" in html and "page 1 of 3" in html


def test_one_page_shows_no_links():
    assert render("", page=Paginator([1, 2], 10).page(1)).strip() == ""

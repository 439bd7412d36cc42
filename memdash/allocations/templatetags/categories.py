"""`{{ name|category_hash }}`: what a link names a category by (`category_hash=` in a query
string, read back by `reads.names.category_named`). A category's name may be of any length (a
5,000-character one made a link past every server's limit on a request line); its hash is at most
20 characters."""

from __future__ import annotations

from django import template

from memdash.allocations.models import category_hash as hash_of

register = template.Library()


@register.filter
def category_hash(name: str) -> int | str:
    return hash_of(name) if name else ""

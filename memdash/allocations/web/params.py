"""The call tree's data-mining rules in a query string, for every view that shows a call tree
(a snapshot's or a build's tree and flame graph, a diff tree): read strictly (400 naming the
parameter), and as the OpenAPI schema states them."""

from __future__ import annotations

from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import NotFound, ValidationError

from memdash.allocations.logic.calltree.mining import RULE_PARAMETERS, Rule
from memdash.allocations.models import Category
from memdash.allocations.reads.names import category_named
from memdash.core.web.schema import int_parameter

MAX_RULES = 20  # symbols or libraries named by one data-mining parameter
MAX_NAME = 2000  # characters of a symbol or library named by a rule
MAX_MINIMUM = 2**62  # minimum bytes or count (`min_bytes`, `min_count`)

RULE_DESCRIPTIONS = {
    "charge_symbol": "a symbol charged to its callers (its frames removed, their own cost "
    "counted in their callers)",
    "prune_symbol": "a symbol pruned (its frames and everything below them removed)",
    "prune_library": "a library (image name) pruned",
    "remove_symbol": "a symbol removed (its callees attached to its callers, its own cost "
    "taken off)",
    "remove_library": "a library (image name) removed",
}
RULE_OPENAPI_PARAMETERS = [
    OpenApiParameter(
        parameter,
        {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_NAME},
            "maxItems": MAX_RULES,
        },
        description=RULE_DESCRIPTIONS[parameter],
    )  # fmt: skip
    for parameter in RULE_PARAMETERS
]
MINIMUM_OPENAPI_PARAMETERS = [
    int_parameter("min_bytes", 0, MAX_MINIMUM, "nodes lighter merged into one line per parent"),
    int_parameter("min_count", 0, MAX_MINIMUM, "nodes of fewer allocations merged likewise"),
]


def parse_rules(params: QueryDict) -> tuple[Rule, ...]:
    """The data-mining rules of a query string, one parameter per kind (`RULE_PARAMETERS`),
    each repeated for each name; in a fixed order, so one set of rules is one cached tree."""
    rules: set[Rule] = set()
    for parameter, (action, target) in RULE_PARAMETERS.items():
        names = params.getlist(parameter)
        if len(names) > MAX_RULES:
            raise ValidationError({parameter: f"at most {MAX_RULES} names"})
        if any(len(name) > MAX_NAME for name in names):
            raise ValidationError({parameter: f"at most {MAX_NAME} characters a name"})
        rules.update(Rule(action, target, name) for name in names if name)
    return tuple(sorted(rules))


def query_category(params: QueryDict) -> str:
    """The category a query names, by `category_hash` (links) or `category` (a name); NotFound
    (404) for a hash no category has."""
    try:
        return category_named(params.get("category", ""), params.get("category_hash", ""))
    except Category.DoesNotExist as exc:
        raise NotFound(str(exc)) from None

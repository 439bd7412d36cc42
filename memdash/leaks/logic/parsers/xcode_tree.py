"""The leak trees of Xcode's `leaks`, read line by line (pure: no Django).

```
    5 (208 bytes) << TOTAL >>

      2 (64 bytes) ROOT CYCLE: <Apartment 0x60000149fb00> [32]
         1 (32 bytes) person --> ROOT CYCLE: <Person 0x60000149fba0> [32]
            apartment --> CYCLE BACK TO <Apartment 0x60000149fb00> [32]

      1 (48 bytes) ROOT LEAK: <HomeViewModel 0x600001aaf390> [48]
```

Each line is a node: `N (size)` counts the node and the nodes under it (size abbreviated,
`1.53K`), then the reference that reaches it from its parent (`person -->`, with its ownership
when the memory graph knows it, `__strong a -->`, `__weak _delegate -->`, and an offset into the
holder, `_node + 64 -->`), `ROOT LEAK:` or `ROOT CYCLE:` on the roots, the block as
`<Class 0xaddress>` (or a bare `0xaddress` when leaks knows no type) and its own size in bytes,
`[32]`, maybe followed by a description of its content. Indentation says who holds whom.
`CYCLE BACK TO <Class 0x…>` closes a loop to a node above it: a retain cycle, read out here as
(class, reference, ownership) links in loop order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memdash.core.logic.errors import InvalidUpload

UNTYPED = "malloc block"  # a block leaks names by its address alone: no class it knows
ROOT_LEAK, ROOT_CYCLE = "ROOT LEAK", "ROOT CYCLE"
# The reference's ownership as the memory graph prints it, in one word each.
OWNERSHIP = {
    "__strong": "strong",
    "__weak": "weak",
    "__unsafe_unretained": "unsafe_unretained",
    "__autoreleasing": "autoreleasing",
    "strong": "strong",
    "weak": "weak",
    "unowned": "unowned",
    "unowned(unsafe)": "unowned",
}
MAX_STORED_NODES = 200  # of a tree kept with its record; the totals count every node

_COUNTED = re.compile(r"^(?P<indent> *)(?P<count>\d+) \((?P<size>[^)]*)\) (?P<rest>.*?)\s*$")
_BACK = re.compile(r"^(?P<indent> *)(?:(?P<edge>[^<>\[\]]+?) --> )?CYCLE BACK TO (?P<node>.*?)\s*$")
_ROOT = re.compile(
    r"^(?:(?P<edge>[^<>\[\]]+?) --> )?(?:(?P<root>ROOT LEAK|ROOT CYCLE): )?(?P<node>.*)$"
)
_NODE = re.compile(
    r"^(?:<(?P<label>.+?) (?P<addr>0x[0-9a-fA-F]+)>|(?P<bare>0x[0-9a-fA-F]+))"
    r"(?: \[(?P<bytes>\d+)\])?(?:\s+(?P<content>.*))?$"
)
_EDGE = re.compile(
    r"^(?:(?P<own>__strong|__weak|__unsafe_unretained|__autoreleasing|strong|weak"
    r"|unowned\(unsafe\)|unowned) )?(?P<field>.*?)\s*(?:\+ ?(?P<offset>\d+))?$"
)
_SIZE = re.compile(r"^(?P<number>\d+(?:\.\d+)?) ?(?P<unit>bytes?|[KMG])$")
TOTAL = "<< TOTAL >>"
_UNITS = {"byte": 1, "bytes": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def size_in_bytes(text: str) -> int | None:
    """`64 bytes` → 64, `1.53K` → 1567 (leaks' K is 1024 bytes, rounded as printed), `27.5M`."""
    match = _SIZE.match(text.strip())
    if match is None:
        return None
    return round(float(match["number"]) * _UNITS[match["unit"]])


@dataclass(frozen=True)
class Edge:
    """The reference from a parent node into its child."""

    field: str  # ivar, property or capture name; "" when leaks names none
    offset: int | None  # the byte offset of the reference inside the holder
    ownership: str  # strong, weak, unsafe_unretained, unowned, autoreleasing; "" unknown

    @property
    def via(self) -> tuple[str, ...]:
        return (self.field,) if self.field else ()

    def label(self) -> str:
        words = [self.ownership and f"__{self.ownership}", self.field]
        if self.offset is not None:
            words.append(f"+ {self.offset}")
        return " ".join(word for word in words if word)


@dataclass
class TreeNode:
    line: int
    indent: int
    cls: str
    address: int | None
    own_bytes: int
    count: int | None  # `N` of `N (size)`: the node and those under it; None on CYCLE BACK TO
    size_text: str  # as printed: `1.53K`, `64 bytes`
    root: str  # ROOT LEAK, ROOT CYCLE or ""
    edge: Edge | None
    content: str = ""
    back: bool = False  # `CYCLE BACK TO`: a reference to a node above, no node of its own
    children: list[TreeNode] = field(default_factory=list)

    def nodes(self) -> list[TreeNode]:
        """This node and every node under it (pre-order), without the CYCLE BACK TO lines."""
        found: list[TreeNode] = []
        stack = [self]
        while stack:
            node = stack.pop()
            if not node.back:
                found.append(node)
            stack.extend(reversed(node.children))
        return found

    @property
    def listed_bytes(self) -> int:
        return sum(node.own_bytes for node in self.nodes())


# (class, reference into it from the previous link, that reference's ownership), loop order.
CycleLink = tuple[str, tuple[str, ...], str]


@dataclass
class Tree:
    """One top-level root and what hangs under it, with the loops found in it."""

    root: TreeNode
    cycles: list[tuple[CycleLink, ...]] = field(default_factory=list)


def parse_edge(text: str | None) -> Edge | None:
    if text is None:
        return None
    match = _EDGE.match(text.strip())
    if match is None:  # the pattern takes any text: never None, but the type says it may be
        return Edge(text.strip(), None, "")
    own, name = match["own"], match["field"]
    if own is None and name in OWNERSHIP:  # `__weak -->` alone
        own, name = name, ""
    offset = int(match["offset"]) if match["offset"] else None
    return Edge(name, offset, OWNERSHIP.get(own or "", ""))


def parse_node_text(text: str, number: int) -> tuple[str, int | None, int, str]:
    """(class, address, own bytes, content) of `<Class 0x…> [32]  content` or `0x… [32]`."""
    match = _NODE.match(text)
    if match is None:
        raise InvalidUpload(
            f"expected a block as leaks prints it (`<Class 0xaddress> [size]` or "
            f"`0xaddress [size]`), got {text[:80]!r}",
            f"line {number}",
        )
    address = match["addr"] or match["bare"]
    cls = match["label"] or UNTYPED
    return cls, int(address, 16), int(match["bytes"] or 0), match["content"] or ""


class TreeReader:
    """Reads tree lines into the trees of their top-level roots."""

    def __init__(self) -> None:
        self.trees: list[Tree] = []
        self._path: list[TreeNode] = []  # the current node's ancestors and itself

    def reset(self) -> None:
        """A separator or another block of the report: what follows starts a tree of its own."""
        self._path = []

    def take(self, line: str, number: int) -> bool:
        """Reads `line` when it is a tree line (False: it is not)."""
        if match := _BACK.match(line):
            self._back(match, number)
            return True
        match = _COUNTED.match(line)
        if match is None:
            return False
        rest = match["rest"]
        if rest == TOTAL:
            return True
        found = _ROOT.match(rest)
        assert found is not None  # the pattern takes any text
        cls, address, own, content = parse_node_text(found["node"], number)
        node = TreeNode(
            line=number, indent=len(match["indent"]), cls=cls, address=address, own_bytes=own,
            count=int(match["count"]), size_text=match["size"], root=found["root"] or "",
            edge=parse_edge(found["edge"]), content=content,
        )  # fmt: skip
        self._place(node, number)
        return True

    def _place(self, node: TreeNode, number: int) -> None:
        while self._path and self._path[-1].indent >= node.indent:
            self._path.pop()
        if self._path:
            self._path[-1].children.append(node)
        elif node.root:
            self.trees.append(Tree(node))
        else:
            raise InvalidUpload(
                "a block that no ROOT LEAK or ROOT CYCLE above it holds: a leak tree starts "
                "with its root (`N (size) ROOT LEAK: <Class 0x…> [size]`)",
                f"line {number}",
            )
        self._path.append(node)

    def _back(self, match: re.Match[str], number: int) -> None:
        cls, address, own, _content = parse_node_text(match["node"], number)
        indent = len(match["indent"])
        while self._path and self._path[-1].indent >= indent:
            self._path.pop()
        target = next((i for i, node in enumerate(self._path) if node.address == address), None)
        if target is None or not self.trees:
            raise InvalidUpload(
                f"CYCLE BACK TO {cls} at {address:#x}: no block above it in its tree has that "
                "address, so the loop cannot be closed",
                f"line {number}",
            )
        edge = parse_edge(match["edge"])
        back = TreeNode(
            line=number, indent=indent, cls=cls, address=address, own_bytes=own, count=None,
            size_text="", root="", edge=edge, back=True,
        )  # fmt: skip
        self._path[-1].children.append(back)
        loop = self._path[target:]
        first_edge = edge or Edge("", None, "")
        links = [(loop[0].cls, first_edge.via, first_edge.ownership)]
        for node in loop[1:]:
            into = node.edge or Edge("", None, "")
            links.append((node.cls, into.via, into.ownership))
        self.trees[-1].cycles.append(tuple(links))


def check_counts(tree: Tree) -> None:
    """leaks never lists more blocks under a node than its count says (it may list fewer: a tree
    cut short); more means two trees ran together, or the text was edited."""
    for node in tree.root.nodes():
        listed = len(node.nodes())
        if node.count is not None and listed > node.count:
            raise InvalidUpload(
                f"{listed} blocks are listed under this {node.cls}, more than its count "
                f"({node.count}) says: the tree was mangled (two trees run together?)",
                f"line {node.line}",
            )


def root_bytes(tree: Tree) -> tuple[int, bool]:
    """The tree's bytes and whether they are exact: the sum of its blocks' own sizes when every
    block is listed, else its abbreviated size as printed (`1.53K`), the best leaks gives."""
    root = tree.root
    if root.count is None or len(root.nodes()) == root.count:
        return root.listed_bytes, True
    printed = size_in_bytes(root.size_text)
    return (printed if printed is not None else root.listed_bytes), False


def shape_of(tree: Tree) -> list[str]:
    """What groups a tree without an allocation stack across reports: its root's kind and
    class, the (reference, class) pairs right under it, and the classes of its loops. Addresses,
    sizes and how many of each are left out: they differ from run to run."""
    root = tree.root
    under = sorted(
        {f"{child.edge.field if child.edge else ''}>{child.cls}" for child in root.children}
    )
    loops = sorted({" > ".join(cls for cls, _via, _own in loop) for loop in tree.cycles})
    return [f"{root.root}:{root.cls}", *under, *(f"loop:{loop}" for loop in loops)]


def flatten(tree: Tree) -> list[dict[str, Any]]:
    """The tree as rows for storage and pages (pre-order, with depth), the first
    MAX_STORED_NODES of them."""
    rows: list[dict[str, Any]] = []
    stack = [(tree.root, 0)]
    while stack and len(rows) < MAX_STORED_NODES:
        node, depth = stack.pop()
        row: dict[str, Any] = {"depth": depth, "class": node.cls, "bytes": node.own_bytes}
        if node.address is not None:
            row["address"] = f"{node.address:#x}"
        if node.count is not None:
            row["count"], row["size"] = node.count, node.size_text
        if node.root:
            row["root"] = node.root
        if node.edge is not None:
            row["edge"] = node.edge.label()
            if node.edge.ownership:
                row["ownership"] = node.edge.ownership
        if node.back:
            row["back"] = True
        if node.content:
            row["content"] = node.content[:200]
        rows.append(row)
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return rows

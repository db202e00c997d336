"""What a certificate may call public about the input's node set, and where it came from.

PRIVACY.md: "public" means declared by the owner, never inferred from the private part. Under ``edge``, ``node`` and
``k-neighbor`` adjacency every method treats the node set (its size and numbering: the node slots) as public. An
edge list only names nodes that have an edge, so a node set read off the edges is a function of the private edges:
one edge whose endpoint has no other edge adds a node (and may renumber all the others). A black-box two-world audit
measured an epsilon lower bound of 4.4 at a certified 1.0 from the released node count alone.

So the node set is an input: :func:`node_set_assumption` refuses an inferred node set unless the owner explicitly
accepts its disclosure (``node_set="from-edges"``), and returns the certificate's ``public_assumptions`` entry that
says where the node set came from. Under ``graph`` adjacency a whole graph is the record: its node count is private
and the collection methods pay for it through the ledger, so nothing is asserted here.

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g, _ = Graph.from_edges(3, np.array([[0, 1]]), node_set="nodes=3")
>>> node_set_assumption(g, adjacency="edge")["node_set"]
'declared by the owner: nodes=3'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphrelease.errors import NodeSetError, OptionError

if TYPE_CHECKING:  # only for annotations: option checks run before numpy / scipy are imported
    from graphrelease.graph import Graph, GraphCollection

#: ``declared`` (default): refuse a node set read off the edges. ``from-edges``: accept it, disclosed.
NODE_SET_POLICIES = ("declared", "from-edges")
DEFAULT_NODE_SET_POLICY = "declared"

HOW_TO_DECLARE = ("declare the nodes with --nodes N (ids 0..N-1) or --nodes FILE (one id per line), or a features/"
                  "labels file listing every node; or accept the disclosure with --node-set from-edges")

FROM_EDGES_DISCLOSURE = (
    "the set of non-isolated nodes was treated as public (the owner chose node_set=from-edges): it was read off the "
    "edges, so the guarantee does not cover an edge whose endpoint has no other edge; such an edge can be revealed "
    "by the node count and numbering of the release")


def check_policy(policy: str | None) -> str:
    policy = DEFAULT_NODE_SET_POLICY if policy is None else str(policy).lower()
    if policy not in NODE_SET_POLICIES:
        raise OptionError(f"--node-set must be one of {', '.join(NODE_SET_POLICIES)}, got {policy!r}")
    return policy


def node_set_assumption(data: Graph | GraphCollection, *, adjacency: str, policy: str | None = None,
                        source: str | None = None) -> dict[str, str]:
    """The ``public_assumptions`` entry for the node set, or :class:`NodeSetError` when it would be a lie.

    Parameters
    ----------
    data:
        The input as read (``Graph.node_set`` records who declared the node set).
    adjacency:
        The certificate's adjacency kind (``edge``, ``node``, ``k-neighbor``, ``graph``).
    policy:
        ``"declared"`` (default) or ``"from-edges"`` (see :data:`NODE_SET_POLICIES`).
    source:
        The input's name for the error message (a path).
    """
    policy = check_policy(policy)
    kind = str(adjacency).split(":")[0].lower()
    if kind == "graph":
        return {}
    from graphrelease.graph import GraphCollection

    graphs = list(data) if isinstance(data, GraphCollection) else [data]
    inferred = [g for g in graphs if g.node_set_inferred]
    if inferred:
        if policy == "declared":
            where = source or getattr(data, "name", "the input")
            which = "its node set was" if len(graphs) == 1 else f"{len(inferred)} of its {len(graphs)} graphs' node sets were"
            raise NodeSetError(f"{where}: {which} read off the edges, so under {kind} adjacency one edge could add or "
                               f"remove a node and nothing may call it public; {HOW_TO_DECLARE}")
        return {"node_set": FROM_EDGES_DISCLOSURE}
    sources = sorted({g.node_set for g in graphs})
    shown = sources[0] if len(sources) == 1 else f"{sources[0]} (and {len(sources) - 1} other declarations)"
    what = "the node set" if len(graphs) == 1 else f"each of the {len(graphs)} graphs' node sets"
    return {"node_set": f"declared by the owner: {shown}" if len(graphs) == 1 else
            f"{what} declared by the owner: {shown}"}


#: Entries other parts of a certificate may hold that speak of the node set as declared or public.
_NODE_SET_KEYS = ("num_nodes", "node_count", "node_order")


def qualify_public_assumptions(public: dict[str, str], node_public: dict[str, str], *, inferred: bool
                               ) -> dict[str, str]:
    """The certificate's ``public_assumptions``: a method's own entries, then the node-set entry. When the node set
    was read off the edges (owner's choice), the method's generic node-set entries are qualified so the certificate
    does not contradict its own disclosure."""
    out = dict(public)
    if inferred:
        for key in _NODE_SET_KEYS:
            if key in out:
                out[key] = ("not declared: read off the edges by the owner's choice (node_set=from-edges); the "
                            "guarantee is limited as node_set says")
    out.update(node_public)
    return out


def node_set_declared(data: Graph | GraphCollection) -> bool:
    """True when no graph's node set was read off its edges."""
    return not data.node_set_inferred

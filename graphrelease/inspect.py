"""``graphrelease inspect``: a summary of an input graph or collection, for the data owner (not for release).

Statistics come from igraph (fast on the 504k-edge Slashdot graph). Definitions:

* density: :math:`2m / (n(n-1))`;
* triangles: number of 3-cliques, :math:`\\tfrac13 \\sum_i t_i` with :math:`t_i` the triangles through node *i*;
* average clustering: mean over all nodes of :math:`C_i = t_i / \\binom{d_i}{2}`, with :math:`C_i = 0` when
  :math:`d_i < 2` (the networkx convention);
* transitivity: :math:`3 \\times` triangles / connected triples.

Example
-------
>>> from graphrelease.io import read_default_graph
>>> summary = inspect_graph(read_default_graph())
>>> summary["nodes"], summary["edges"], summary["triangles"]
(2708, 5278, 1630)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphrelease.graph import Graph, GraphCollection


def graph_summary(graph: Graph) -> dict[str, Any]:
    """Structure statistics of one graph (igraph)."""
    g = graph.to_igraph()
    degrees = graph.degrees()
    components = g.connected_components()
    sizes = np.asarray(components.sizes(), dtype=np.int64)
    local = np.nan_to_num(np.asarray(g.transitivity_local_undirected(mode="zero"), dtype=np.float64))
    # t_i = C_i * d_i (d_i - 1) / 2; each triangle is counted at its three corners.
    per_node = local * degrees * (degrees - 1) / 2.0
    triangles = int(round(per_node.sum() / 3.0))
    return {
        "nodes": graph.num_nodes,
        "edges": graph.num_edges,
        "density": graph.density,
        "degree": {
            "min": int(degrees.min()),
            "median": float(np.median(degrees)),
            "mean": float(degrees.mean()),
            "max": int(degrees.max()),
        },
        "isolated_nodes": int((degrees == 0).sum()),
        "connected_components": int(sizes.size),
        "largest_component": int(sizes.max()),
        "triangles": triangles,
        "average_clustering": float(local.mean()),
        "transitivity": float(g.transitivity_undirected()) if graph.num_edges else 0.0,
        "features": graph.num_features if graph.has_features else None,
        "features_sparse": bool(graph.has_features and not isinstance(graph.features, np.ndarray)),
        "labels": graph.has_labels,
        "classes": graph.num_classes if graph.has_labels else None,
        "labelled_nodes": int((graph.labels >= 0).sum()) if graph.has_labels else None,
        "original_ids": graph.node_ids is not None,
    }


def _spread(values: list[int]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"min": float(arr.min()), "median": float(np.median(arr)), "mean": float(arr.mean()), "max": float(arr.max())}


def collection_summary(collection: GraphCollection) -> dict[str, Any]:
    """Totals and per-graph size statistics of a collection."""
    graphs = collection.graphs
    triangles = 0
    for graph in graphs:
        g = graph.to_igraph()
        local = np.nan_to_num(np.asarray(g.transitivity_local_undirected(mode="zero"), dtype=np.float64))
        deg = graph.degrees()
        triangles += int(round((local * deg * (deg - 1) / 2.0).sum() / 3.0))
    labels = collection.graph_labels
    return {
        "graphs": len(collection),
        "nodes": collection.num_nodes,
        "edges": collection.num_edges,
        "triangles": triangles,
        "nodes_per_graph": _spread([g.num_nodes for g in graphs]),
        "edges_per_graph": _spread([g.num_edges for g in graphs]),
        "graph_labels": labels is not None,
        "graph_classes": int(np.unique(labels).size) if labels is not None else None,
        "features": graphs[0].num_features if all(g.has_features for g in graphs) else None,
        "node_labels": all(g.has_labels for g in graphs),
    }


def _node_set_line(data: Any) -> str:
    """Where the node set came from, as the certificate will state it (or why a release would be refused)."""
    from graphrelease.privacy.public_inputs import HOW_TO_DECLARE

    if data.node_set_inferred:
        return f"read off the edges (not declared): {HOW_TO_DECLARE}"
    graphs = list(data) if isinstance(data, GraphCollection) else [data]
    sources = sorted({g.node_set for g in graphs})
    return "declared: " + (sources[0] if len(sources) == 1 else f"{sources[0]} (+{len(sources) - 1} more)")


def inspect_graph(load_result: Any) -> dict[str, Any]:
    """Summary dict of a :class:`~graphrelease.io.LoadResult` (JSON-able): format, statistics, what was dropped."""
    data = load_result.data
    report = load_result.report
    summary: dict[str, Any] = {"path": load_result.path, "format": load_result.format, "name": data.name}
    if isinstance(data, GraphCollection):
        summary["kind"] = "collection"
        summary.update(collection_summary(data))
    else:
        summary["kind"] = "graph"
        summary.update(graph_summary(data))
    summary["node_set"] = _node_set_line(data)
    summary["reader"] = {
        "input_rows": report.input_rows,
        "directed_input": report.directed_input,
        "dropped": report.dropped_summary(),
        "notes": list(report.notes),
    }
    return summary

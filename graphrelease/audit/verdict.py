"""The audit's verdict: per release, in plain words, what is kept, what is lost, and whether it is degenerate.

A data owner reads the verdict first, so it is computed only from the audit's own numbers (statistics, degree
histograms, motif cosines, attacks, empirical bounds) with thresholds that are stated in :data:`VERDICT_LEGEND`:

* a statistic is **kept** when its relative error ``|s_release - s_original| / |s_original|`` (the denominator at
  least 1 for counts, so 3 triangles instead of 0 is 300%, not infinite) is at most
  :data:`KEPT_MAX` (10%), **lost** when it is at least :data:`LOST_MIN` (50%), **changed** in between;
* the degree distribution is compared by the KL divergence of log2-binned degrees (bins 0, 1, 2-3, 4-7, ...): kept
  at most :data:`KL_KEPT_MAX`, lost at least :data:`KL_LOST_MIN`;
* the motif proportions by the cosine of the graphlet-count vectors: kept at least :data:`COSINE_KEPT_MIN`, lost
  below :data:`COSINE_LOST_MAX`;
* the input's communities (single graphs) by the modularity of the input's Louvain partition on the release's same
  node ids compared with its modularity on the input, as a statistic that is never lost when stronger: a release can
  keep edges, degrees and triangles and still place its edges with no regard to the input's communities (a random
  graph with the input's degrees scores about 0 on them).

Degenerate releases (empty, mostly isolated nodes where the input has far fewer, one giant star, far denser than the
input, another node count) are flagged from :func:`graph_shape` figures; :func:`degenerate_flags` is shared with the
batch summary.

Example
-------
>>> orig = {"num_nodes": 100, "num_edges": 300, "isolated_fraction": 0.0, "top_node_edge_share": 0.1,
...         "num_graphs": 1}
>>> degenerate_flags(orig, dict(orig, num_edges=0, isolated_fraction=1.0, top_node_edge_share=0.0))
['empty graph: no edges at all']
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from graphrelease.graph import Graph

KEPT_MAX = 0.1
LOST_MIN = 0.5
KL_KEPT_MAX = 0.1
KL_LOST_MIN = 1.0
COSINE_KEPT_MIN = 0.9
COSINE_LOST_MAX = 0.5
#: Below this modularity the input's Louvain partition is no community structure to keep (the verdict says nothing).
MIN_COMMUNITY_MODULARITY = 0.05
#: A release is "mostly isolated" above this isolated share when the input's share is below half of the release's.
ISOLATED_MAJORITY = 0.5
#: One node touching this share of all edges (with >= 3 edges) is a giant star, unless the input is one too.
STAR_SHARE = 0.9
#: This many times the input's edges is a densified release (e.g. noise turned into edges).
DENSE_FACTOR = 10.0

#: (statistics key, plain name, phrase): "count" reads "N name instead of M"; "relative" reads "name -93%".
#: Counts among them have a relative-error denominator of at least 1.
VERDICT_STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("num_edges", "edges", "relative"),
    ("triangle_count", "triangles", "relative"),
    ("num_components", "components", "count"),
    ("lcc_size", "largest component", "relative"),
    ("avg_clustering", "clustering", "relative"),
    ("cpl", "path lengths (CPL)", "relative"),
)

VERDICT_LEGEND = (
    f"Verdict thresholds: a statistic is kept if its relative error |release - original| / |original| (at least 1 "
    f"for counts) is "
    f"<= {KEPT_MAX:g} (within {KEPT_MAX:.0%}), lost if >= {LOST_MIN:g}, changed in between; collections compare "
    "means over graphs. Degree distribution: KL(original || release) of log2-binned degrees (bins 0, 1, 2-3, 4-7, "
    f"...; 1e-6 smoothing), kept if <= {KL_KEPT_MAX:g}, lost if >= {KL_LOST_MIN:g}. Motif proportions: cosine of "
    f"the graphlet-count vectors, kept if >= {COSINE_KEPT_MIN:g}, lost if < {COSINE_LOST_MAX:g}. Input communities "
    "(one graph): the modularity of the input's Louvain partition on the release (node i of the release read as "
    "node i of the input) compared with its modularity on the input, by relative error as a statistic, never lost "
    "when stronger (a random graph with the input's degrees scores about 0; generators that do not keep node "
    f"identities score so by design); not judged below modularity {MIN_COMMUNITY_MODULARITY:g}. Degenerate: no "
    f"edges; more than {ISOLATED_MAJORITY:.0%} of the nodes isolated where the input has less than half that share; "
    f"one node on >= {STAR_SHARE:.0%} of the edges (giant star) where the input has no such node; >= "
    f"{DENSE_FACTOR:g}x the input's edges; graphs of another node count than a single-graph input. Membership "
    "advantage = 2 * accuracy - 1 of the edge-membership attack on the released adjacency (TPR - FPR at its "
    "threshold; 0 = no better than chance). Link-inference AUC 0.5 = chance."
)


# ---------------------------------------------------------------------------------------------------- shapes
def graph_shape(graphs: Sequence[Graph]) -> dict[str, float]:
    """Means over ``graphs`` of the figures the degenerate flags read (nodes, edges, isolated share, star share)."""
    if not graphs:
        return {"num_graphs": 0}
    rows = []
    for g in graphs:
        deg = g.degrees()
        m = g.num_edges
        rows.append((g.num_nodes, m, float(np.mean(deg == 0)) if g.num_nodes else 0.0,
                     float(deg.max()) / m if m else 0.0))
    a = np.asarray(rows, dtype=float)
    return {"num_graphs": len(graphs), "num_nodes": float(a[:, 0].mean()), "num_edges": float(a[:, 1].mean()),
            "isolated_fraction": float(a[:, 2].mean()), "top_node_edge_share": float(a[:, 3].mean()),
            "node_counts_differ": bool(np.unique(a[:, 0]).size > 1)}


def degenerate_flags(original: dict[str, Any], release: dict[str, Any], *, single_graph: bool = True) -> list[str]:
    """Plain-words flags for a release shape that no utility number should hide (see the module docstring)."""
    flags: list[str] = []
    if not release.get("num_graphs"):
        return flags
    if release["num_edges"] == 0:
        return ["empty graph: no edges at all"]
    iso, iso_orig = release["isolated_fraction"], original.get("isolated_fraction", 0.0)
    if iso > ISOLATED_MAJORITY and iso_orig < iso / 2:
        flags.append(f"mostly isolated: {iso:.0%} of the nodes have no edge (input: {iso_orig:.0%})")
    star, star_orig = release["top_node_edge_share"], original.get("top_node_edge_share", 0.0)
    if star >= STAR_SHARE and release["num_edges"] >= 3 and star_orig < STAR_SHARE:
        flags.append(f"giant star: one node touches {star:.0%} of the edges")
    if original.get("num_edges") and release["num_edges"] >= DENSE_FACTOR * original["num_edges"]:
        flags.append(f"densified: {release['num_edges'] / original['num_edges']:.0f}x the input's edges")
    if single_graph and original.get("num_nodes") and (
            release.get("node_counts_differ") or release["num_nodes"] != original["num_nodes"]):
        flags.append(f"another node count ({release['num_nodes']:,.0f} vs {original['num_nodes']:,.0f}): not made "
                     "from this input, or re-sampled at another size")
    return flags


# ---------------------------------------------------------------------------------------------------- numbers
COUNTS = frozenset({"num_edges", "triangle_count", "num_components", "lcc_size"})


def relative_error(release: float, original: float, *, count: bool = False) -> float:
    """|release - original| / |original|; for counts the denominator is at least 1 (0 vs 3 is 300%, not inf)."""
    return abs(release - original) / max(abs(original), 1.0 if count else 1e-12)


def log2_binned(hist: Sequence[float]) -> np.ndarray:
    """Degree distribution p_k -> masses of the bins {0}, {1}, {2,3}, {4..7}, ..."""
    p = np.asarray(hist, dtype=float)
    if p.size == 0:
        return np.ones(1)
    k = np.arange(p.size)
    bins = np.where(k == 0, 0, np.floor(np.log2(np.maximum(k, 1))).astype(int) + 1)
    return np.bincount(bins, weights=p)


def degree_kl(original: Sequence[float], release: Sequence[float], smoothing: float = 1e-6) -> float:
    """KL(original || release) in nats of the log2-binned degree distributions, both smoothed by ``smoothing``."""
    p, q = log2_binned(original), log2_binned(release)
    size = max(p.size, q.size)
    p = np.pad(p, (0, size - p.size)) + smoothing
    q = np.pad(q, (0, size - q.size)) + smoothing
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def _status(value: float, kept: float, lost: float, higher_is_better: bool = False) -> str:
    if higher_is_better:
        return "kept" if value >= kept else "lost" if value < lost else "changed"
    return "kept" if value <= kept else "lost" if value >= lost else "changed"


def _count(x: float) -> str:
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:,.1f}"


def _statistic_item(key: str, name: str, phrase: str, orig: float, rel: float) -> dict[str, Any]:
    err = relative_error(rel, orig, count=key in COUNTS)
    status = _status(err, KEPT_MAX, LOST_MIN)
    if status == "kept" and phrase == "count":
        text = f"{name} {_count(rel)} (original {_count(orig)})"
    elif phrase == "count" or orig == 0:
        text = f"{_count(rel)} {name} instead of {_count(orig)}"
    else:
        text = f"{name} {(rel - orig) / abs(orig):+.0%}"
    return {"what": key, "name": name, "original": orig, "release": rel, "relative_error": err, "status": status,
            "text": text}


def _community_item(orig_stats: dict[str, Any], rel_stats: dict[str, Any]) -> dict[str, Any] | None:
    """The input's Louvain communities on the release's same node ids (``input_communities_modularity``, single-graph
    audits): kept when their modularity on the release is within :data:`KEPT_MAX` of theirs on the input, lost when it
    is :data:`LOST_MIN` weaker (a random graph with the input's degrees scores about 0), changed otherwise; a release
    on which they are stronger is never "lost". Inputs whose partition has modularity below
    :data:`MIN_COMMUNITY_MODULARITY` have no communities to keep: no item."""
    o, r = orig_stats.get("input_communities_modularity"), rel_stats.get("input_communities_modularity")
    if o is None or r is None or not (math.isfinite(o) and math.isfinite(r)) or o < MIN_COMMUNITY_MODULARITY:
        return None
    err = relative_error(float(r), float(o))
    status = _status(err, KEPT_MAX, LOST_MIN) if r < o else ("kept" if err <= KEPT_MAX else "changed")
    return {"what": "input_communities_modularity", "name": "input communities", "original": float(o),
            "release": float(r), "relative_error": err, "status": status,
            "text": f"input communities (their modularity {r:.2f} on the release, same node ids; {o:.2f} on the "
                    "input)"}


def _privacy(label: str, summary: dict[str, Any], attacks: dict[str, Any], empirical: list[dict[str, Any]]
             ) -> dict[str, Any]:
    out: dict[str, Any] = {"epsilon": summary.get("epsilon"), "delta": summary.get("delta"),
                           "guarantee": summary.get("guarantee")}
    res = attacks.get(label) or {}
    if "link_inference" in res:
        out["link_inference_auc"] = res["link_inference"]["auc"]
    if "link_inference_reference" in res:
        out["link_inference_auc_original"] = res["link_inference_reference"]["auc"]
    member = res.get("membership_model") or res.get("membership_adjacency")
    if member is not None:
        out["membership_advantage"] = 2.0 * member["accuracy"] - 1.0
        out["membership_tpr_at_1pct_fpr"] = member["tpr_at_1pct_fpr"]
    # run_audit labels its canary audits "<release label> (re-fitted ...)"
    mine = [e for e in empirical if str(e.get("label") or "").startswith(label)]
    if mine:
        best = max(mine, key=lambda e: e.get("epsilon_lower") or 0.0)
        out["empirical_epsilon_lower"] = best.get("epsilon_lower")
        out["empirical_runs"] = best.get("runs")
        out["empirical_violation"] = best.get("violation")
    return out


def _headline(flags: list[str], items: list[dict[str, Any]]) -> str:
    if flags:
        return "degenerate"
    statuses = [i["status"] for i in items]
    if not statuses:
        return "no structure compared"
    if "lost" not in statuses:
        return "structure kept" if "changed" not in statuses else "mostly kept"
    return "structure lost" if "kept" not in statuses else "partly kept"


def privacy_utility_curves(table1: list[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """``{method[/mode]: [[epsilon, mean relative error], ...]}`` for methods audited at >= 2 distinct epsilons."""
    groups: dict[str, dict[float, list[float]]] = {}
    for row in table1:
        eps, err = row.get("epsilon"), row.get("mean_relative_error")
        if eps is None or err is None or not row.get("method"):
            continue
        name = row["method"] + (f"/{row['mode']}" if row.get("mode") else "")
        if row.get("guarantee") not in (None, "proved"):
            name += " (no guarantee)"
        groups.setdefault(name, {}).setdefault(float(eps), []).append(float(err))
    return {name: [[e, float(np.mean(v))] for e, v in sorted(pts.items())]
            for name, pts in sorted(groups.items()) if len(pts) >= 2}


def build_verdict(d: dict[str, Any], shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The verdict of an audit from its numbers (the dict of ``AuditResult.to_dict``) and the graph ``shapes``
    (``{"original": graph_shape(...), release label: graph_shape(...)}``)."""
    stats = d.get("statistics") or {}
    hists = d.get("degree_histograms") or {}
    motif_rel = (d.get("motifs") or {}).get("releases") or {}
    single = d["original"].get("kind") == "graph"
    orig_stats = stats.get("original", {})
    releases = []
    for summary in d["releases"]:
        label = summary["label"]
        shape = shapes.get(label, {"num_graphs": 0})
        flags = degenerate_flags(shapes.get("original", {}), shape, single_graph=single)
        items: list[dict[str, Any]] = []
        rel_stats = stats.get(label, {})
        for key, name, phrase in VERDICT_STATISTICS:
            o, r = orig_stats.get(key), rel_stats.get(key)
            if o is None or r is None or not (math.isfinite(o) and math.isfinite(r)):
                continue
            items.append(_statistic_item(key, name, phrase, float(o), float(r)))
        community = _community_item(orig_stats, rel_stats)
        if community is not None:
            items.append(community)
        if label in hists and "original" in hists:
            kl = degree_kl(hists["original"], hists[label])
            status = _status(kl, KL_KEPT_MAX, KL_LOST_MIN)
            items.insert(0, {"what": "degree_kl", "name": "degree distribution", "release": kl, "status": status,
                             "text": f"degree distribution (KL {kl:.2f})"})
        cos = (motif_rel.get(label) or {}).get("motif_cosine")
        if cos is not None and math.isfinite(cos):
            status = _status(cos, COSINE_KEPT_MIN, COSINE_LOST_MAX, higher_is_better=True)
            items.append({"what": "motif_cosine", "name": "motif proportions", "release": cos, "status": status,
                          "text": f"motif proportions (cosine {cos:.2f})"})
        by = {s: [i["text"] for i in items if i["status"] == s] for s in ("kept", "changed", "lost")}
        releases.append({
            "label": label, "headline": _headline(flags, items), "flags": flags, "kept": by["kept"],
            "changed": by["changed"], "lost": by["lost"], "items": items, "shape": shape,
            "privacy": _privacy(label, summary, d.get("attacks") or {}, d.get("empirical") or []),
        })
    return {"releases": releases, "curves": privacy_utility_curves(d.get("table1") or []),
            "thresholds": {"kept_max": KEPT_MAX, "lost_min": LOST_MIN, "kl_kept_max": KL_KEPT_MAX,
                           "kl_lost_min": KL_LOST_MIN, "cosine_kept_min": COSINE_KEPT_MIN,
                           "cosine_lost_max": COSINE_LOST_MAX, "isolated_majority": ISOLATED_MAJORITY,
                           "star_share": STAR_SHARE, "dense_factor": DENSE_FACTOR},
            "legend": VERDICT_LEGEND}

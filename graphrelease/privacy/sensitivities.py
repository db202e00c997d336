"""The sensitivity each ledger stage's proof establishes, for ``certificate verify`` to check stated entries against.

A certificate's ledger states every mechanism's parameters, its sensitivity included, and the epsilons are
recomputed from them. That alone cannot catch a consistently edited entry (say, a Laplace sensitivity halved with
its epsilon), so the verifier also compares each entry with what ``docs/privacy.md`` proves for its stage. Stages
listed here have a constant sensitivity under the given adjacency; entries of other stages (sensitivities that
depend on a released or declared parameter, DP-SGD in units of its clipping bound) are checked for internal
consistency only. A stage may be added here only together with its proof section.
"""

from __future__ import annotations

#: (adjacency kind, stage) -> sensitivity the proof establishes (L1 for Laplace, utility sensitivity for the
#: exponential mechanism, per-cell for randomised response)
DECLARED_SENSITIVITY: dict[tuple[str, str], float] = {
    ("edge", "chung_lu.edge_count"): 1.0,
    ("edge", "chung_lu.degrees"): 2.0,
    ("edge", "chung_lu.sorted_degrees"): 2.0,
    ("edge", "dp_dcsbm.node_degrees"): 2.0,
    ("edge", "dp_dcsbm.block_sorted_degrees"): 2.0,
    ("edge", "dp_dcsbm.block_counts"): 1.0,
    ("edge", "dp_dcsbm.partition_select"): 4.0,
    ("edge", "dp_bter.sorted_degrees"): 2.0,
    ("edge", "dp_bter.node_degrees"): 2.0,
    ("edge", "dp_bter.cumulative_degrees"): 2.0,
    ("edge", "dp_bter.block_counts"): 1.0,
    ("edge", "dp_bter.edge_count"): 1.0,
    ("edge", "dp_bter.components"): 1.0,
    ("edge", "dp_bter.clustering_sum"): 1.0 + 8.0 / 3.0,  # per-edge cap C = 1: C + 8/3
    ("edge", "dp_bter.partition_select"): 4.0,
    ("edge", "dp_bter.partition_down"): 1.0,
    ("edge", "dp_bter.partition_up"): 1.0,
    ("edge", "dpdk.edge_count"): 1.0,
    **{("edge", f"{deep}.edge_counts"): 1.0 for deep in ("dpgvae", "dpggan")},
    **{("edge", f"{deep}.measured.{stat}"): s for deep in ("dpgvae", "dpggan")
       for stat, s in (("edge_counts", 1.0), ("degree_histograms", 4.0), ("scaled_triangles", 1.0),
                       ("components", 1.0))},
    ("edge", "gap.edge_count"): 1.0,
    ("edge", "dpdk.degree_cap"): 2.0,
    ("edge", "privgraph.community_init"): 1.0,
    ("edge", "privgraph.community_adjust"): 1.0,
    ("edge", "privgraph.extract"): 1.0,
    ("edge", "randomized_response.edge_count"): 1.0,
    ("edge", "randomized_response.cells"): 1.0,
    ("edge", "tmf.edge_count"): 1.0,
    ("edge", "tmf.cells"): 1.0,
}


#: (adjacency kind, stage) -> multiple of the entry's stated degree cap (``params["cap"]``) that the proof establishes
#: for capped queries, whose cap is chosen from released degrees (docs/privacy.md#dp-bter).
CAP_MULTIPLE_SENSITIVITY: dict[tuple[str, str], float] = {
    ("edge", "dp_bter.triangles_scale"): 2.0,
    ("edge", "dp_bter.triangles"): 2.0,
    ("edge", "dp_bter.triangles_profile"): 10.0,
}


def declared_sensitivity(adjacency_kind: str, stage: str) -> float | None:
    """The proved sensitivity of ``stage`` under ``adjacency_kind``, or None when it is not a constant."""
    return DECLARED_SENSITIVITY.get((str(adjacency_kind), str(stage)))


def entry_problems(entry, adjacency_kind: str) -> list[str]:
    """What is wrong with one ledger entry's stated parameters (empty when they are consistent). A malformed entry
    (missing or non-numeric parameters, a zero scale) is a problem reported, never an exception."""
    try:
        return _entry_problems(entry, adjacency_kind)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        return [f"{entry.stage}: malformed parameters ({type(err).__name__}: {err})"]


def _entry_problems(entry, adjacency_kind: str) -> list[str]:
    problems = []
    p = entry.params
    if entry.mechanism == "laplace":
        if "scale" not in p:
            problems.append(f"{entry.stage}: Laplace entry states no noise scale, so its epsilon cannot be recomputed")
        else:
            implied = float(entry.sensitivity) / float(p["scale"])
            if abs(implied - float(p["epsilon"])) > 1e-9 * max(1.0, implied):
                problems.append(f"{entry.stage}: Laplace epsilon {p['epsilon']} != sensitivity {entry.sensitivity} / "
                                f"scale {p['scale']} = {implied:.6g}")
    proved = declared_sensitivity(adjacency_kind, entry.stage)
    if proved is not None and abs(float(entry.sensitivity) - proved) > 1e-12:
        problems.append(f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes {proved}")
    multiple = CAP_MULTIPLE_SENSITIVITY.get((str(adjacency_kind), str(entry.stage)))
    if multiple is not None:
        if "cap" not in p:
            problems.append(f"{entry.stage}: states no degree cap, so its sensitivity ({multiple:g} x cap) cannot be "
                            "recomputed")
        elif abs(float(entry.sensitivity) - multiple * float(p["cap"])) > 1e-9 * max(1.0, float(entry.sensitivity)):
            problems.append(f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes "
                            f"{multiple:g} x cap {p['cap']} = {multiple * float(p['cap']):.6g}")
    return problems

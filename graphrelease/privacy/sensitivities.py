"""The sensitivity each ledger stage's proof establishes, for ``certificate verify`` to check stated entries against.

A certificate's ledger states every mechanism's parameters, its sensitivity included, and the epsilons are
recomputed from them. That alone cannot catch a consistently edited entry (say, a Laplace sensitivity halved with
its epsilon), so the verifier also compares each entry with what ``docs/privacy.md`` proves for its stage. Stages
listed here have a constant sensitivity under the given adjacency; entries of other stages (sensitivities that
depend on a released or declared parameter, DP-SGD in units of its clipping bound) are checked for internal
consistency only. A stage may be added here only together with its proof section.
"""

from __future__ import annotations

import math

from graphrelease.errors import OptionError

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
    ("edge", "dp_bter.edge_count_second"): 1.0,  # the same count released again
    ("edge", "dp_bter.components"): 1.0,
    ("edge", "dp_bter.clustering_sum"): 1.0 + 2.0,  # per-edge cap C = 1: C + 2
    ("edge", "dp_bter.clustering_sum_second"): 1.0 + 2.0,  # the same sum released again
    ("edge", "dp_bter.partition_select"): 4.0,
    ("edge", "dp_bter.partition_down"): 1.0,
    ("edge", "dp_bter.partition_up"): 1.0,
    ("edge", "dpdk.edge_count"): 1.0,
    **{("edge", f"{deep}.edge_counts"): 1.0 for deep in ("dpgvae", "dpggan")},
    **{("edge", f"{deep}.measured.{stat}"): s for deep in ("dpgvae", "dpggan")
       for stat, s in (("edge_counts", 1.0), ("degree_histograms", 4.0), ("scaled_triangles", 1.0),
                       ("components", 1.0), ("max_degrees", 1.0))},
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

#: (adjacency kind, stage) -> offset the proof adds to the entry's stated per-edge cap (``params["cap"]``): the
#: capped local-clustering sum has sensitivity ``C + 2`` (docs/privacy.md#local-clustering-sum), its cap ``C`` chosen
#: from the public node count and the share. Entries written before the cap was stated carry none and are checked
#: against the ``C = 1`` value in :data:`DECLARED_SENSITIVITY`.
CAP_OFFSET_SENSITIVITY: dict[tuple[str, str], float] = {
    ("edge", "dp_bter.clustering_sum"): 2.0,
    ("edge", "dp_bter.clustering_sum_second"): 2.0,
}


def row_release_sensitivity(kind: str, k: int | None, degree_cap: int | None, noise: str = "gaussian") -> float:
    r"""Sensitivity of :math:`A \bar W` with every row of :math:`\bar W` of norm <= 1 and edge weights in [0, 1]:
    GAP's aggregation (docs/privacy.md#gap-aggregation) and DPDGC's Z release (#dpdgc-z) are this query. L2
    (``gaussian``, rows of L2 norm <= 1): edge sqrt 2, k-neighbour sqrt(k^2 + k), node sqrt(D^2 + D); L1 (``laplace``,
    rows of L1 norm <= 1; the changed rows add up): edge 2, k-neighbour 2k, node 2D. The models calibrate with it
    and ``certificate verify`` recomputes it from an entry's stated cap, so the two cannot drift apart."""
    l1 = noise == "laplace"
    if kind == "edge":
        return 2.0 if l1 else math.sqrt(2.0)
    if kind == "k-neighbor":
        return float(2 * int(k)) if l1 else math.sqrt(int(k) ** 2 + int(k))
    if kind == "node":
        d = int(degree_cap)
        return float(2 * d) if l1 else math.sqrt(d * d + d)
    raise OptionError(f"no analysis of a row-normalised aggregation under adjacency '{kind}'")


def row_group_size(kind: str, k: int | None, degree_cap: int | None) -> int:
    """Rows of A (training examples of DPDGC's DP-Emb) one privacy unit can change: the endpoints of an edge, a node
    and its k changed neighbours, or a node and its at most D neighbours."""
    if kind == "edge":
        return 2
    if kind == "k-neighbor":
        return int(k) + 1
    if kind == "node":
        return int(degree_cap) + 1
    raise OptionError(f"no analysis of a row-level release under adjacency '{kind}'")


#: Stages whose proved sensitivity is :func:`row_release_sensitivity` of the adjacency's k and the entry's stated
#: degree cap (``params["cap"]``, node adjacency), and the DP-SGD stage whose group is :func:`row_group_size`.
ROW_RELEASE_STAGES = ("gap.aggregation.", "dpdgc.z_release")
ROW_GROUP_STAGES = ("dpdgc.dp_emb.dpsgd",)


def _row_stage_problems(entry, adjacency_kind: str, k: int | None) -> list[str]:
    p = entry.params
    row_release = any(entry.stage.startswith(prefix) for prefix in ROW_RELEASE_STAGES)
    if not row_release and entry.stage not in ROW_GROUP_STAGES:
        return []
    if adjacency_kind == "node" and "cap" not in p:
        return [f"{entry.stage}: states no degree cap, so its sensitivity cannot be recomputed"]
    if adjacency_kind == "k-neighbor" and k is None:
        return [f"{entry.stage}: the certificate's adjacency states no k, so its sensitivity cannot be recomputed"]
    cap = p.get("cap")
    if not row_release:
        proved_group = row_group_size(adjacency_kind, k, cap)
        # the joint-convexity entry states its group as examples_per_unit (and sensitivity g), the engine's own
        # entry as group_size
        stated_group = int(p.get("examples_per_unit", entry.group_size))
        if stated_group != proved_group:
            return [f"{entry.stage}: stated group of {stated_group} examples but its proof establishes "
                    f"{proved_group} under {adjacency_kind} adjacency"]
        if entry.mechanism == "joint_convexity_gaussian" and abs(float(entry.sensitivity) - proved_group) > 1e-9:
            return [f"{entry.stage}: stated sensitivity {entry.sensitivity} but a group of {proved_group} examples "
                    f"is {proved_group} clipping bounds"]
        return []
    if p.get("one_sided") and adjacency_kind == "edge":
        proved = 1.0  # one-sided label sources (models/label_sources.py): an edge changes one row by one entry
    else:
        proved = row_release_sensitivity(adjacency_kind, k, cap, "laplace" if entry.mechanism == "laplace" else "gaussian")
    if abs(float(entry.sensitivity) - proved) > 1e-9 * max(1.0, proved):
        return [f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes {proved:.6g}"]
    return []


#: Selection mechanisms whose stated noise scale the verifier recomputes epsilon from, with the name its messages use.
SELECTION_NAMES = {"permute_and_flip": "noisy-max", "exponential": "exponential-mechanism",
                   "gumbel_topk": "exponential-mechanism"}
#: Stages whose utility is proved monotone (one edge moves one coordinate of one selection, in one direction), so that
#: their selection is epsilon-DP at noise scale sensitivity / epsilon (docs/privacy.md#dp-partition). Any other
#: entry stating ``monotone`` is refused: the flag halves the epsilon the verifier recomputes.
MONOTONE_UTILITY_STAGES = frozenset({"dp_bter.partition_down", "dp_bter.partition_up"})


def declared_sensitivity(adjacency_kind: str, stage: str) -> float | None:
    """The proved sensitivity of ``stage`` under ``adjacency_kind``, or None when it is not a constant."""
    return DECLARED_SENSITIVITY.get((str(adjacency_kind), str(stage)))


def entry_problems(entry, adjacency_kind: str, k: int | None = None) -> list[str]:
    """What is wrong with one ledger entry's stated parameters (empty when they are consistent); ``k`` is the
    k-neighbour adjacency's k. A malformed entry (missing or non-numeric parameters, a zero scale) is a problem
    reported, never an exception."""
    try:
        return _entry_problems(entry, adjacency_kind) + _row_stage_problems(entry, adjacency_kind, k)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OptionError) as err:
        return [f"{entry.stage}: malformed parameters ({type(err).__name__}: {err})"]


def _entry_problems(entry, adjacency_kind: str) -> list[str]:
    problems = []
    p = entry.params
    if p.get("monotone") and entry.stage not in MONOTONE_UTILITY_STAGES:
        problems.append(f"{entry.stage}: states a monotone utility, which no proof of this stage establishes")
    if entry.mechanism in SELECTION_NAMES and "scale" in p:
        # A selection's noise scale fixes its epsilon: Delta / scale for report-noisy-max with exponential noise and
        # for a monotone utility (docs/privacy.md#permute-and-flip), 2 Delta / scale for Gumbel-max
        # (noise.exponential_mechanism_scale). Entries from before the scale was stated carry none: not checked.
        factor = 1.0 if entry.mechanism == "permute_and_flip" or p.get("monotone") else 2.0
        implied = factor * float(entry.sensitivity) / float(p["scale"])
        if abs(implied - float(p["epsilon"])) > 1e-9 * max(1.0, implied):
            problems.append(f"{entry.stage}: {SELECTION_NAMES[entry.mechanism]} epsilon {p['epsilon']} != "
                            f"{'' if factor == 1.0 else '2 x '}sensitivity {entry.sensitivity} / scale "
                            f"{p['scale']} = {implied:.6g}")
    if entry.mechanism == "exponential" and "keep_probability" in p:
        # randomised response on cells: bounded range ln(p/q) + ln((1-q)/(1-p)) must not exceed the stated epsilon
        keep, flip_in = float(p["keep_probability"]), float(p["flip_in_probability"])
        # |ln(p/q)| + |ln((1-q)/(1-p))|: the range for either ordering of p and q (the code always has p > q)
        implied = abs(math.log(keep / flip_in)) + abs(math.log1p(-flip_in) - math.log1p(-keep))
        if implied > float(p["epsilon"]) * (1 + 1e-9) + 1e-12:
            problems.append(f"{entry.stage}: cell reports with keep {keep:g} and flip-in {flip_in:g} have bounded "
                            f"range {implied:.6g} > stated epsilon {p['epsilon']}")
    if entry.mechanism == "laplace":
        if "scale" not in p:
            problems.append(f"{entry.stage}: Laplace entry states no noise scale, so its epsilon cannot be recomputed")
        else:
            implied = float(entry.sensitivity) / float(p["scale"])
            if abs(implied - float(p["epsilon"])) > 1e-9 * max(1.0, implied):
                problems.append(f"{entry.stage}: Laplace epsilon {p['epsilon']} != sensitivity {entry.sensitivity} / "
                                f"scale {p['scale']} = {implied:.6g}")
    proved = declared_sensitivity(adjacency_kind, entry.stage)
    # Stating more than the proof needs only overstates epsilon (the entry's epsilon is its sensitivity / scale):
    # still true, and a bundle released before a sharper proof (dp_bter.clustering_sum: 11/3 -> 3) keeps verifying.
    if proved is not None and float(entry.sensitivity) < proved * (1 - 1e-12):
        problems.append(f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes {proved}")
    offset = CAP_OFFSET_SENSITIVITY.get((str(adjacency_kind), str(entry.stage)))
    if offset is not None and "cap" in p:
        if float(p["cap"]) < 0 or float(entry.sensitivity) < (float(p["cap"]) + offset) * (1 - 1e-12):
            problems.append(f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes "
                            f"cap {p['cap']} + {offset:g} = {float(p['cap']) + offset:.6g}")
    multiple = CAP_MULTIPLE_SENSITIVITY.get((str(adjacency_kind), str(entry.stage)))
    if multiple is not None:
        if "cap" not in p:
            problems.append(f"{entry.stage}: states no degree cap, so its sensitivity ({multiple:g} x cap) cannot be "
                            "recomputed")
        elif abs(float(entry.sensitivity) - multiple * float(p["cap"])) > 1e-9 * max(1.0, float(entry.sensitivity)):
            problems.append(f"{entry.stage}: stated sensitivity {entry.sensitivity} but its proof establishes "
                            f"{multiple:g} x cap {p['cap']} = {multiple * float(p['cap']):.6g}")
    return problems

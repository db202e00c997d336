"""``benchmarks/bench_cliques_cores.py`` and its proxies (structure log item 40): the inputs are what the docstrings
say, and the three arms differ only where the docstring says, so ``reports/cliques_cores.md`` stays reproducible."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_cliques_cores as bc  # noqa: E402
import proxies  # noqa: E402

import graphrelease.generators.bter as bter  # noqa: E402
from graphrelease.audit.statistics import triangle_count  # noqa: E402


def test_proxies_are_the_graphs_the_docstring_names():
    core = proxies.proxy_graph("core0")
    degrees = np.sort(core.degrees())[::-1]
    assert core.num_nodes == 3100 and 7_000 <= core.num_edges <= 8_000
    assert 60 <= degrees[99] and degrees[100] <= 3  # 100 core nodes; the periphery links to 1-3 of them
    assert proxies.is_proxy("core1") and proxies.proxy_graph("core1").num_edges != core.num_edges
    cave = proxies.proxy_graph("cave100_10")
    assert (cave.num_nodes, cave.num_edges, triangle_count(cave)) == (1000, 4500, 11_200)
    ring = proxies.proxy_graph("ring60_8")
    assert (ring.num_nodes, ring.num_edges, triangle_count(ring)) == (480, 1740, 3360)
    windmill = proxies.proxy_graph("windmill200_4")
    assert (windmill.num_nodes, windmill.num_edges, triangle_count(windmill)) == (601, 1200, 800)
    assert windmill.degrees().max() == 600


def test_arms_set_the_cap_and_the_pass_and_restore_them():
    joins, hubs = bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS
    assert bc.ARMS["shipped"] == (joins, hubs) and hubs and np.isfinite(joins)
    with bc.arm("before"):
        assert bter.GROUP_JOIN_EDGES == np.inf and not bter.HUBS_APART_PASS
        assert bter.affinity_edge_cap(4500, 100) == 0.9 * 4500
    with bc.arm("cap"):
        assert bter.GROUP_JOIN_EDGES == joins and not bter.HUBS_APART_PASS
    assert (bter.GROUP_JOIN_EDGES, bter.HUBS_APART_PASS) == (joins, hubs)


def test_one_cell_runs_and_renders_every_arm():
    result = bc.run(["cave100_10"], [1.0], seeds=1)
    assert {arm for (_, _, arm) in result["cells"]} == set(bc.ARMS)
    before, cap, shipped = (result["cells"][("cave100_10", 1.0, arm)][0] for arm in ("before", "cap", "shipped"))
    assert before["released"] == cap["released"] == shipped["released"]  # one fit, three samplers
    assert cap["triangles"] > before["triangles"]  # 9,079 -> 11,016 (median of 5) in reports/cliques_cores.md
    assert shipped["hub_pass"] == 0.0  # the count is met: the pass never runs here
    table = bc.render(result, [1.0], 1)
    assert "| cave100_10 | 1 |" in table and table.count(" / ") >= 11

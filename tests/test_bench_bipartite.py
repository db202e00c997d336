"""``benchmarks/bench_bipartite.py`` and its proxies (structure log item 38): the inputs are what the docstrings say
(triangle-free, the sizes stated), and the three arms differ only where the docstring says, so
``reports/bipartite.md`` stays reproducible."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_bipartite as bb  # noqa: E402
import proxies  # noqa: E402

import graphrelease.generators.bter as bter  # noqa: E402
import graphrelease.generators.dp_stats as dp_stats  # noqa: E402
from graphrelease.audit.statistics import triangle_count  # noqa: E402


def test_transaction_proxy_is_a_triangle_free_merchant_customer_graph():
    g = proxies.proxy_graph("trans0")
    assert g.num_nodes == 5200 and 19_000 <= g.num_edges <= 21_000
    assert triangle_count(g) == 0
    degrees = np.sort(g.degrees())[::-1]
    assert degrees[0] > 1000  # the most popular merchant (Zipf 1.2 over 200)
    assert proxies.is_proxy("trans1000_20000_0") and proxies.is_proxy("cover_cora")


def test_double_cover_keeps_the_degrees_twice_over_and_has_no_triangle(data_dir):
    cover = proxies.proxy_graph("cover_cora")
    cora = bb.load_dataset("cora")
    assert cover.num_nodes == 2 * cora.num_nodes and cover.num_edges == 2 * cora.num_edges
    assert triangle_count(cover) == 0
    assert np.array_equal(np.sort(cover.degrees()), np.sort(np.concatenate([cora.degrees(), cora.degrees()])))


def test_arms_set_the_passes_and_the_correction_and_restore_them():
    passes, noise, hubs = bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS
    assert bb.ARMS["shipped"] == (passes, noise, hubs) and len(passes) == 2 and hubs
    with bb.arm("before"):
        assert bter.SAMPLER_PASSES == passes[:1] and dp_stats.CORRECTION_NOISE == -np.inf
        assert not bter.HUBS_APART_PASS  # item 40's pass came later
    with bb.arm("one pass"):
        assert bter.SAMPLER_PASSES == passes[:1] and dp_stats.CORRECTION_NOISE == noise
        assert not bter.HUBS_APART_PASS
    assert (bter.SAMPLER_PASSES, dp_stats.CORRECTION_NOISE, bter.HUBS_APART_PASS) == (passes, noise, hubs)


def test_one_cell_runs_and_renders_every_arm():
    result = bb.run(["kbip10_300"], [1.0], seeds=1)
    assert {arm for (_, _, arm) in result["cells"]} == set(bb.ARMS)
    shipped = result["cells"][("kbip10_300", 1.0, "shipped")][0]
    before = result["cells"][("kbip10_300", 1.0, "before")][0]
    assert shipped["sided"] == 1.0 and before["sided"] == 0.0
    assert shipped["triangles"] < 0.1 * before["triangles"]  # 13,450 -> 0 in reports/bipartite.md
    table = bb.render(result, [1.0], 1)
    assert "| kbip10_300 | 1 |" in table and table.count(" / ") >= 9

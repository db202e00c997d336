"""synthesize / sample_release end to end on real data: the release verifies, holds no private metadata, and bad
options fail with clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphrelease.errors import BudgetError, OptionError, ReleaseError, UncertifiedError
from graphrelease.io import read_graph
from graphrelease.privacy.certificate import verify_release
from graphrelease.synth import default_delta, sample_release, synthesize

FAST = {"steps": 3, "batch_size": 128}


@pytest.fixture(scope="module")
def cora_small(data_dir):
    g = read_graph(data_dir / "single" / "cora.npz").data.induced_subgraph(np.arange(300))
    # give it original ids to check they never reach the release
    return g.replace(node_ids=np.array([f"paper-{i}" for i in range(g.num_nodes)]))


@pytest.fixture(scope="module")
def release(cora_small, tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "release"
    result = synthesize(cora_small, method="dpgvae", epsilon=2.0, num_graphs=2, out=out, options=FAST)
    return out, result


def test_release_verifies_and_is_proved(release, cora_small):
    out, result = release
    assert result.guarantee == "proved", result.certificate.get("guarantee_reason")
    assert result.epsilon_spent <= 2.0 * (1 + 1e-6)
    assert result.key_path is not None and result.key_path.exists()
    assert not result.key_path.resolve().is_relative_to(out.resolve())  # the key stays outside
    report = verify_release(out, input_graph=cora_small, key=result.key_path)
    assert report.ok, report.problems
    assert sorted(p.name for p in (out / "graphs").iterdir()) == ["graph_000.csv", "graph_001.csv"]
    assert (out / "model" / "decoder.safetensors").exists()


def test_release_holds_no_private_metadata(release, cora_small):
    out, _ = release
    text = "".join(p.read_text(errors="ignore") for p in out.rglob("*") if p.is_file() and p.suffix != ".safetensors")
    assert "paper-" not in text  # original node ids
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["reproducible_seed_used"] is False
    assert not any("seed" in k.lower() for k in cert.get("extra", {}))
    assert "input_sha256" not in text
    stages = [e["stage"] for e in cert["ledger"]["entries"]]
    # one graph, default deep mode `measured`: every value sampling uses went through dp_bter's mechanisms
    # (dp_bter releases its edge count first: the mean degree it gives decides the later shares)
    assert stages[0] == "dp_bter.edge_count" and all(s.startswith("dp_bter.") for s in stages)


def test_sample_release_is_post_processing(release, tmp_path):
    out, _ = release
    more = sample_release(out, 3, tmp_path / "more")
    assert more.num_graphs == 3 and more.epsilon_spent == 0.0
    cert = json.loads((tmp_path / "more" / "certificate.json").read_text())
    assert cert["extra"]["post_processing"]["num_graphs"] == 3
    assert len(list((tmp_path / "more" / "graphs").iterdir())) == 3
    assert verify_release(tmp_path / "more").ok


def test_paper_mode_needs_allow_uncertified(cora_small, tmp_path):
    g = cora_small.induced_subgraph(np.arange(60))
    with pytest.raises(UncertifiedError, match="allow-uncertified"):
        synthesize(g, method="dpgvae", mode="paper", epsilon=1.0, out=tmp_path / "p")
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
def test_paper_mode_release_says_guarantee_none(cora_small, tmp_path):
    g = cora_small.induced_subgraph(np.arange(60))
    r = synthesize(g, method="dpgvae", mode="paper", epsilon=5.0, out=tmp_path / "p", allow_uncertified=True,
                   options={"steps": 2, "paper_sample_rate": 0.5})
    assert r.guarantee == "none"
    assert "receptive field" in r.certificate["guarantee_reason"]


def test_bad_options(cora_small, tmp_path, release):
    with pytest.raises(OptionError, match="unknown generator"):
        synthesize(cora_small, method="nope", epsilon=1.0, out=tmp_path / "a")
    with pytest.raises(OptionError, match="epsilon"):
        synthesize(cora_small, method="dpgvae", epsilon=-1.0, out=tmp_path / "a")
    with pytest.raises(OptionError, match="graph adjacency|collection"):
        synthesize(cora_small, method="dpgvae", epsilon=1.0, adjacency="graph", out=tmp_path / "a")
    with pytest.raises(ReleaseError, match="already exists"):
        synthesize(cora_small, method="dpgvae", epsilon=1.0, out=release[0])
    with pytest.raises(OptionError, match="no option"):
        synthesize(cora_small, method="dpgvae", epsilon=1.0, out=tmp_path / "a", options={"bogus": 1})
    assert not (tmp_path / "a").exists()


def test_infeasible_budget_message(cora_small, tmp_path):
    with pytest.raises(BudgetError, match="smallest feasible epsilon"):
        synthesize(cora_small, method="dpgvae", epsilon=1e-3, out=tmp_path / "b",
                   mode="buckets", options={"steps": 2000, "batch_size": 280})
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_collection_in_collection_out(data_dir, tmp_path):
    coll = read_graph(data_dir / "collections" / "IMDB-MULTI").data.subset(list(range(10)))
    r = synthesize(coll, method="dpggan", epsilon=3.0, num_graphs=3, out=tmp_path / "c", adjacency="graph",
                   options={"steps": 2, "batch_size": 4})
    assert r.guarantee == "proved" and r.num_graphs == 3
    assert default_delta(coll) == 1e-5


def test_a_seed_never_hides_behind_a_proved_certificate(tmp_path):
    """Review finding F1: a seed passed as a method option must not yield guarantee: proved."""
    from graphrelease.io import load_default_graph

    cora = load_default_graph()
    with pytest.raises(OptionError, match="'seed' is not a method option"):
        synthesize(cora, method="randomized_response", epsilon=2.0, out=tmp_path / "a", options={"seed": 7})
    r = synthesize(cora, method="randomized_response", epsilon=2.0, out=tmp_path / "b", seed=7,
                   allow_uncertified=True)
    assert r.guarantee == "none" and r.certificate["reproducible_seed_used"] is True


def test_default_single_graph_method_is_the_measured_winner(tmp_path):
    from graphrelease.io import load_default_graph
    from graphrelease.synth import DEFAULT_SINGLE_GRAPH_METHOD

    r = synthesize(load_default_graph(), epsilon=1.0, out=tmp_path / "d")
    assert r.method == DEFAULT_SINGLE_GRAPH_METHOD == "dp_bter"
    assert r.guarantee == "proved" and r.epsilon_spent <= 1.0 + 1e-9

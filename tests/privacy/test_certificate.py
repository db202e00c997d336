"""Certificates: content, guarantee rules, schema, input binding, and verification of untouched/tampered releases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from graphrelease.errors import OptionError
from graphrelease.io import load_default_graph
from graphrelease.privacy.binding import input_hmac, load_key, write_key
from graphrelease.privacy.budget import Budget
from graphrelease.privacy.calibration import schedule_entry
from graphrelease.privacy.certificate import (
    Certificate,
    build_certificate,
    certificate_epsilon,
    certificate_ledger,
    human_summary,
    json_schema,
    verify_release,
)
from graphrelease.privacy.ledger import LedgerEntry
from graphrelease.privacy.proofs import has_proof
from graphrelease.release import ReleaseWriter, sha256_file

DELTA = 1e-5
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cora():
    return load_default_graph()


def charged_budget(seed_entry=None, accountant="pld"):
    b = Budget(epsilon=3.0, delta=DELTA, adjacency="edge", accountant=accountant)
    b.charge(LedgerEntry(mechanism="gaussian", stage="sketch", params={"noise_multiplier": 20.0},
                         sensitivity=math.sqrt(2), proof="gaussian"))
    b.charge(seed_entry or schedule_entry(noise_multiplier=1.2, sample_rate=0.01, steps=300, stage="train"))
    return b


def make_release(tmp_path: Path, graph, budget, *, used_seed=False) -> tuple[Path, Path]:
    out = tmp_path / "release"
    key_file = tmp_path / "release.key"
    key = write_key(key_file)
    with ReleaseWriter(out) as w:
        w.write_graph("graphs/graph_000.csv", graph.without_private_metadata())
        binding = input_hmac(graph, key)
        w.finalize(lambda artifacts: build_certificate(
            budget=budget, method="test", mode="default", artifacts=artifacts,
            public_assumptions={"num_nodes": "node count is public under edge adjacency"},
            released=["graphs/graph_000.csv"], reproducible_seed_used=used_seed,
            extra={"input_hmac_sha256": binding}))
    return out, key_file


def rewrite_certificate(release: Path, mutate, *, fix_manifest: bool) -> None:
    cert_path = release / "certificate.json"
    cert = json.loads(cert_path.read_text())
    mutate(cert)
    cert_path.write_text(json.dumps(cert, indent=2, sort_keys=True))
    if fix_manifest:  # a careful forger also updates the manifest: the recomputation must still catch it
        man_path = release / "manifest.json"
        man = json.loads(man_path.read_text())
        man["certificate"]["sha256"] = sha256_file(cert_path)
        man["certificate"]["size"] = cert_path.stat().st_size
        man_path.write_text(json.dumps(man, indent=2, sort_keys=True))


def test_certificate_content(cora):
    b = charged_budget()
    cert = build_certificate(budget=b, method="m", mode="default", artifacts={"graphs/g.csv": "0" * 64},
                             public_assumptions={"features": "public"}, released=["graphs/g.csv"])
    Certificate.model_validate(cert)
    assert cert["guarantee"] == "proved", cert["guarantee_reason"]
    assert cert["epsilon"] == pytest.approx(b.spent_epsilon()) and cert["epsilon"] <= 3.0
    assert cert["epsilons"]["pld"] <= cert["epsilons"]["rdp"]
    deltas = [row["delta"] for row in cert["epsilon_at_deltas"]]
    assert {1e-4, 1e-5, 1e-6, 1e-7, 1e-8} <= set(deltas)
    eps_by_delta = [row["pld"] for row in sorted(cert["epsilon_at_deltas"], key=lambda r: -r["delta"])]
    assert eps_by_delta == sorted(eps_by_delta)  # smaller delta, larger epsilon
    assert cert["privacy_unit"]["adjacency"] == "edge" and "trusted curator" in cert["trust_model"]
    assert cert["accountants"]["rdp"]["orders"] and cert["accountants"]["pld"]["versions"]["dp-accounting"] == "0.6.0"
    assert cert["dp_sgd"]["steps"] == 300 and cert["dp_sgd"]["noise_multipliers"] == [1.2]
    assert certificate_ledger(cert).entries == b.ledger.entries
    assert certificate_epsilon(cert) == cert["epsilon"]
    text = json.dumps(cert).lower()
    assert "seed\":" not in text.replace("reproducible_seed_used", "")
    assert "train" in human_summary(cert)
    with pytest.raises(OptionError, match="never go into a release"):
        build_certificate(budget=b, method="m", mode="d", artifacts={}, public_assumptions={}, released=[],
                          extra={"seed": 3})


def test_guarantee_none_reasons():
    seeded = build_certificate(budget=charged_budget(), method="m", mode="d", artifacts={}, public_assumptions={},
                               released=[], reproducible_seed_used=True)
    assert seeded["guarantee"] == "none" and "seed" in seeded["guarantee_reason"]
    unsound = charged_budget(LedgerEntry(mechanism="gaussian", stage="paper", params={"noise_multiplier": 50.0},
                                         proof="gaussian", sound=False, note="discriminator reads raw A"))
    c = build_certificate(budget=unsound, method="m", mode="paper", artifacts={}, public_assumptions={}, released=[])
    assert c["guarantee"] == "none" and "discriminator reads raw A" in c["guarantee_reason"]
    noproof = charged_budget(LedgerEntry(mechanism="gaussian", stage="x", params={"noise_multiplier": 50.0},
                                         proof="no-such-section"))
    c = build_certificate(budget=noproof, method="m", mode="d", artifacts={}, public_assumptions={}, released=[])
    assert c["guarantee"] == "none" and "no-such-section" in c["guarantee_reason"]
    baseline = build_certificate(budget=Budget.unlimited("edge"), method="er", mode="d", artifacts={},
                                 public_assumptions={}, released=[])
    assert baseline["guarantee"] == "none" and baseline["non_private"] and baseline["epsilon"] is None
    assert "non-private" in baseline["guarantee_reason"]


def test_proof_anchors_exist_for_core_mechanisms():
    for anchor in ("gaussian", "subsampled-gaussian-poisson", "subsampled-gaussian-replace-one", "permute-and-flip",
                   "subsampled-gaussian-wor", "group-privacy", "laplace", "exponential", "gumbel-topk",
                   "joint-convexity-gaussian", "relational-coupled", "docs/privacy.md#gaussian"):
        assert has_proof(anchor), anchor
    assert not has_proof("") and not has_proof("made-up-anchor")


def test_schema_file_is_up_to_date():
    committed = json.loads((REPO / "schemas" / "certificate.schema.json").read_text())
    assert committed == json_schema(), "regenerate with: python -m graphrelease.privacy.certificate_schema"


def test_untouched_release_verifies_with_binding(tmp_path, cora):
    out, key_file = make_release(tmp_path, cora, charged_budget())
    assert not (out / "release.key").exists() and key_file.parent == out.parent  # the key stays outside
    report = verify_release(out, input_graph=cora, key=key_file)
    assert report.ok, report.problems
    assert any("HMAC" in c for c in report.checks)
    assert report.recomputed["independent_rdp"] <= report.recomputed["rdp"] * 1.01


@pytest.mark.parametrize("fix_manifest", [False, True])
def test_tampered_epsilon_fails(tmp_path, cora, fix_manifest):
    out, _ = make_release(tmp_path, cora, charged_budget())
    rewrite_certificate(out, lambda c: c.update(epsilon=c["epsilon"] / 2), fix_manifest=fix_manifest)
    report = verify_release(out)
    assert not report.ok and any("stated epsilon" in p for p in report.problems)


def test_tampered_ledger_parameter_fails(tmp_path, cora):
    out, _ = make_release(tmp_path, cora, charged_budget())

    def more_noise(c):
        c["ledger"]["entries"][1]["params"]["noise_multiplier"] = 5.0

    rewrite_certificate(out, more_noise, fix_manifest=True)
    report = verify_release(out)
    assert not report.ok and any("recomputed" in p for p in report.problems)


def test_tampered_artifact_byte_fails(tmp_path, cora):
    out, _ = make_release(tmp_path, cora, charged_budget())
    path = out / "graphs" / "graph_000.csv"
    data = bytearray(path.read_bytes())
    data[-2] = ord("7") if data[-2] != ord("7") else ord("8")
    path.write_bytes(bytes(data))
    report = verify_release(out)
    assert not report.ok and any("graph_000.csv" in p for p in report.problems)


def test_wrong_key_and_wrong_graph_fail(tmp_path, cora):
    out, key_file = make_release(tmp_path, cora, charged_budget())
    other_key = tmp_path / "other.key"
    write_key(other_key)
    assert not verify_release(out, input_graph=cora, key=other_key).ok
    neighbour = cora.replace(edges=cora.edges[1:])  # one edge removed
    assert not verify_release(out, input_graph=neighbour, key=load_key(key_file)).ok
    with pytest.raises(OptionError):
        verify_release(out, input_graph=cora)


def test_forged_guarantee_fails(tmp_path, cora):
    out, _ = make_release(tmp_path, cora, charged_budget(), used_seed=True)
    assert verify_release(out).ok  # honest 'none' verifies
    rewrite_certificate(out, lambda c: c.update(guarantee="proved", reproducible_seed_used=False,
                                                 guarantee_reason="x"), fix_manifest=True)
    # dropping the seed flag is not detectable from the ledger, but a forged 'proved' on an unsound ledger is:
    out2, _ = make_release(tmp_path / "b", cora, charged_budget(LedgerEntry(
        mechanism="gaussian", stage="paper", params={"noise_multiplier": 50.0}, proof="gaussian", sound=False)))
    rewrite_certificate(out2, lambda c: c.update(guarantee="proved"), fix_manifest=True)
    report = verify_release(out2)
    assert not report.ok and any("guarantee" in p for p in report.problems)


# ------------------------------------------------------------------ ledger entries recomputed, owner signatures
def _synth_release(tmp_path: Path, *, signing_key=None, method="chung_lu"):
    from graphrelease.synth import synthesize

    graph = load_default_graph()
    return synthesize(graph, method=method, epsilon=1.0, out=tmp_path / "rel", key_path=tmp_path / "rel.key",
                      signing_key=signing_key).release_dir


def _halve_laplace_sensitivity(cert):
    """A consistent forgery of one Laplace entry: sensitivity and epsilon halved together (scale kept), and the
    headline epsilons lowered to match, as a forger who knows the accountant would."""
    for e in cert["ledger"]["entries"]:
        if e["mechanism"] == "laplace":
            e["sensitivity"] = e["sensitivity"] / 2
            e["params"]["epsilon"] = e["params"]["epsilon"] / 2


def test_doubled_sensitivity_with_consistent_manifest_fails(tmp_path):
    out = _synth_release(tmp_path)
    assert verify_release(out).ok

    def doubled(cert):
        cert["ledger"]["entries"][0]["sensitivity"] *= 2

    rewrite_certificate(out, doubled, fix_manifest=True)
    report = verify_release(out)
    assert not report.ok
    assert any("sensitivity" in p for p in report.problems), report.problems


def test_halved_sensitivity_fails_against_the_proof(tmp_path):
    out = _synth_release(tmp_path)
    rewrite_certificate(out, _halve_laplace_sensitivity, fix_manifest=True)
    report = verify_release(out)
    assert any("its proof establishes" in p for p in report.problems), report.problems


def test_signed_release_verifies_and_a_consistent_forgery_does_not(tmp_path):
    from graphrelease.privacy.signing import generate_keypair

    private, public = generate_keypair(tmp_path / "keys" / "owner.key")
    out = _synth_release(tmp_path, signing_key=private)
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["extra"]["signature"]["signed"] is True and (out / "manifest.sig").is_file()
    report = verify_release(out, signer_key=public)
    assert report.ok, report.problems
    # a forger lowers the epsilon and recomputes every hash (certificate and manifest): still caught by signature
    rewrite_certificate(out, lambda c: c.update(epsilon_budget=c["epsilon_budget"]), fix_manifest=True)
    report = verify_release(out, signer_key=public)
    assert not report.ok and any("signature does not verify" in p for p in report.problems), report.problems


def test_resigned_or_stripped_forgery_fails_against_the_owners_key(tmp_path):
    from graphrelease.privacy.signing import generate_keypair, load_private_key, sign_bytes

    owner_private, owner_public = generate_keypair(tmp_path / "keys" / "owner.key")
    forger_private, _ = generate_keypair(tmp_path / "keys" / "forger.key")
    out = _synth_release(tmp_path, signing_key=owner_private)
    forger = load_private_key(forger_private)
    from graphrelease.privacy.signing import public_key_hex

    def resigned(cert):
        cert["extra"]["signature"]["public_key"] = public_key_hex(forger.public_key())

    rewrite_certificate(out, resigned, fix_manifest=True)
    (out / "manifest.sig").write_text(sign_bytes(forger, (out / "manifest.json").read_bytes()))
    assert verify_release(out).ok  # self-consistent under the key it names ...
    report = verify_release(out, signer_key=owner_public)  # ... but not the owner's
    assert not report.ok and any("not by the --signer-key" in p for p in report.problems)
    rewrite_certificate(out, lambda c: c["extra"].update(signature={"signed": False}), fix_manifest=True)
    (out / "manifest.sig").unlink()
    report = verify_release(out, signer_key=owner_public)
    assert not report.ok and any("not signed" in p for p in report.problems)


def test_unsigned_release_says_so(tmp_path):
    out = _synth_release(tmp_path)
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["extra"]["signature"] == {"signed": False}
    report = verify_release(out)
    assert report.ok and any("not signed" in c for c in report.checks)


def test_malformed_ledger_entry_is_a_problem_not_a_crash(tmp_path):
    out = _synth_release(tmp_path)

    def zero_scale(cert):
        for e in cert["ledger"]["entries"]:
            if e["mechanism"] == "laplace":
                e["params"]["scale"] = 0

    rewrite_certificate(out, zero_scale, fix_manifest=True)
    report = verify_release(out)
    assert not report.ok and any("malformed parameters" in p for p in report.problems)


def test_an_existing_key_is_never_overwritten_without_force(tmp_path):
    from graphrelease.errors import ReleaseError
    from graphrelease.synth import synthesize

    out = _synth_release(tmp_path)  # writes tmp_path / "rel.key"
    key_before = (tmp_path / "rel.key").read_bytes()
    with pytest.raises(ReleaseError, match="already exists"):
        synthesize(load_default_graph(), method="chung_lu", epsilon=1.0, out=tmp_path / "other",
                   key_path=tmp_path / "rel.key")
    assert (tmp_path / "rel.key").read_bytes() == key_before and not (tmp_path / "other").exists()
    assert out.is_dir()

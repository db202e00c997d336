"""``certificate verify`` recomputes the sensitivities of GAP's node-level aggregation, DPDGC's Z release and the
DP-Emb group from the public degree cap / k the entries state (privacy/sensitivities.py row_release_sensitivity),
so a consistently edited entry (sensitivity and epsilon changed together) no longer passes."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _small import small_cora  # noqa: E402

from graphrelease.models.dpdgc import DPDGC  # noqa: E402
from graphrelease.models.gap import GAP  # noqa: E402
from graphrelease.privacy.budget import Budget  # noqa: E402
from graphrelease.privacy.ledger import LedgerEntry  # noqa: E402
from graphrelease.privacy.sensitivities import entry_problems  # noqa: E402


def edited(entry: LedgerEntry, **params) -> LedgerEntry:
    d = entry.to_dict()
    d["params"] = {**d["params"], **params}
    return LedgerEntry.from_dict(d)


@pytest.mark.parametrize("adjacency,k", [("node", None), ("k-neighbor:3", 3)])
def test_dpdgc_entries_are_tied_to_the_cap_and_k(data_dir, adjacency, k):
    g = small_cora(data_dir, n=150)
    b = Budget(epsilon=8.0, delta=1e-5, adjacency=adjacency, accountant="rdp")
    DPDGC(encoder_epochs=1, epochs=1, degree_cap=5).fit(g, b)
    kind = adjacency.split(":")[0]
    entries = {e.stage: e for e in b.ledger.entries}
    assert all(entry_problems(e, kind, k) == [] for e in b.ledger.entries)
    z = entries["dpdgc.z_release"]
    emb = entries["dpdgc.dp_emb.dpsgd"]
    if kind == "node":
        assert z.params["cap"] == 5 and emb.params["cap"] == 5
        # a smaller stated cap with the sensitivity left as it was is caught, and so is a group that does not match
        assert any("proof establishes" in p for p in entry_problems(edited(z, cap=2), kind))
        assert any("group of" in p for p in entry_problems(edited(emb, cap=2), kind))
        no_cap = LedgerEntry.from_dict({**z.to_dict(), "params": {kk: v for kk, v in z.params.items() if kk != "cap"}})
        assert any("no degree cap" in p for p in entry_problems(no_cap, kind))
    else:
        # under k-neighbour adjacency the certificate's k decides: another k is another proved sensitivity
        assert any("proof establishes" in p for p in entry_problems(z, kind, k + 1))
        assert any("cannot be recomputed" in p for p in entry_problems(z, kind, None))
    halved = dataclasses.replace(z, sensitivity=z.sensitivity / 2)
    assert any("proof establishes" in p for p in entry_problems(halved, kind, k))


def test_gap_node_aggregation_is_tied_to_the_cap(data_dir):
    g = small_cora(data_dir, n=150)
    b = Budget(epsilon=8.0, delta=1e-5, adjacency="node", accountant="rdp")
    GAP(encoder_epochs=1, epochs=1, degree_cap=4, hops=1).fit(g, b)
    agg = next(e for e in b.ledger.entries if e.stage.startswith("gap.aggregation."))
    assert agg.params["cap"] == 4 and agg.sensitivity == pytest.approx((4 * 4 + 4) ** 0.5)
    assert all(entry_problems(e, "node") == [] for e in b.ledger.entries)
    assert any("proof establishes" in p for p in entry_problems(edited(agg, cap=1), "node"))

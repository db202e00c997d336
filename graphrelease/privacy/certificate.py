"""The privacy certificate: a machine-checkable statement of what a release guarantees, and its verifier.

:func:`build_certificate` renders a :class:`Certificate` (pydantic; JSON Schema at ``schemas/certificate.schema.json``)
from the run's :class:`~graphrelease.privacy.budget.Budget` and its ledger: privacy unit and neighbouring relation,
the mechanism chain, epsilon at the chosen delta and at other deltas under both accountants (PLD and RDP side by
side) with their versions and grids, the trust model, public assumptions, released artifacts with SHA-256, the
DP-SGD reporting checklist ("How to DP-fy ML", Ponomareva et al. 2023, Sec. 5.3; NIST SP 800-226), and
``guarantee: proved | none`` with the reason. It never contains the seed, the noise or a plain hash of the input; the
optional input binding is an HMAC under a key the data owner keeps outside the release
(:mod:`graphrelease.privacy.binding`).

:func:`verify_release` re-checks a release directory: every artifact's SHA-256 against the manifest and the
certificate, the certificate against its schema, epsilon recomputed from the ledger (the PLD must reproduce the stated
value; an independent RDP path through dp-accounting's own accountant must not exceed the stated RDP value beyond
1%), the guarantee recomputed, and the HMAC binding when an input and key are given. Any mismatch fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from graphrelease.errors import OptionError, ReleaseError
from graphrelease.privacy.accountants import REPORT_DELTAS, analyse, compute_epsilon, get_accountant
from graphrelease.privacy.adjacency import Adjacency
from graphrelease.privacy.ledger import LedgerEntry, PrivacyLedger

SCHEMA_VERSION = "graphrelease-certificate/1"
TRUST_MODEL = (
    "central model: a trusted curator (the data owner's machine running graphrelease) sees the raw input; only the "
    "released artifacts are protected, and the guarantee holds against any adversary who sees them"
)
_REL_TOL = 1e-4  # recomputation tolerance for the stated epsilons (same libraries, same grid)
_INDEPENDENT_TOL = 0.01  # the independent RDP path may differ by the conversion / grid


# -------------------------------------------------------------------------------------------------- the model


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EntryModel(_Model):
    mechanism: str
    stage: str
    params: dict[str, float | int | str | bool]
    count: int
    sensitivity: float
    group_size: int
    proof: str
    sound: bool
    note: str


class LedgerModel(_Model):
    adjacency: str
    entries: list[EntryModel]


class PrivacyUnit(_Model):
    adjacency: str
    description: str
    neighbouring_relations: list[str]


class EpsilonAtDelta(_Model):
    delta: float
    pld: float | None
    rdp: float | None


class AccountantInfo(_Model):
    name: str
    description: str
    library: str
    versions: dict[str, str]
    orders: list[float] | None = None
    value_discretization_interval: float | None = None


class DPSGDChecklist(_Model):
    checklist: str
    privacy_unit: str
    accounting: str
    batch_sampling: list[str]
    sample_rates: list[float]
    noise_multipliers: list[float]
    steps: int
    clipping: str
    hyperparameters_tuned_on_private_data: str
    final_model_selection: str


class Certificate(_Model):
    schema_version: str
    tool: str
    tool_version: str
    method: str
    mode: str
    privacy_unit: PrivacyUnit
    trust_model: str
    non_private: bool
    epsilon: float | None
    delta: float
    accountant: str
    accounting_method: str
    epsilon_budget: float | None
    epsilons: dict[str, float | None]
    epsilon_at_deltas: list[EpsilonAtDelta]
    accountants: dict[str, AccountantInfo]
    ledger: LedgerModel
    sampling_schemes: list[str]
    public_assumptions: dict[str, str]
    released: list[str]
    artifacts: dict[str, str]
    reproducible_seed_used: bool
    guarantee: Literal["proved", "none"]
    guarantee_reason: str
    dp_sgd: DPSGDChecklist | None
    input_hmac_sha256: str | None
    summary: str
    extra: dict[str, Any]


def json_schema() -> dict:
    """The certificate's JSON Schema (committed at ``schemas/certificate.schema.json``)."""
    schema = Certificate.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://graphrelease.invalid/schemas/certificate.schema.json"
    schema["description"] = (__doc__ or "").strip().split("\n\n")[0]
    return schema


# -------------------------------------------------------------------------------------------------- building


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _sampling_scheme(e: LedgerEntry) -> str:
    p = e.params
    if e.mechanism == "subsampled_gaussian":
        sampling = str(p.get("sampling", "poisson"))
        nb = str(p.get("neighboring", "add_remove"))
        if sampling == "wor":
            return f"{e.stage}: fixed-size batches without replacement (rate {p.get('sample_rate', '?')}), {nb}"
        return f"{e.stage}: Poisson sampling (rate {p.get('sample_rate')}), {nb}"
    if e.mechanism == "joint_convexity_gaussian":
        return f"{e.stage}: coupled sampling, the unit takes part with probability {p.get('pair_rate')}"
    if e.mechanism == "relational_coupled":
        return (f"{e.stage}: Poisson positives (rate {p.get('sample_rate')}) + {p.get('num_negatives')} negatives "
                "per positive without replacement (coupled)")
    return f"{e.stage}: no subsampling ({e.mechanism})"


def _relations(ledger: PrivacyLedger) -> list[str]:
    rels = set()
    for e in ledger:
        nb = str(e.params.get("neighboring", "add_remove")) if e.mechanism == "subsampled_gaussian" else None
        if nb == "replace_one":
            rels.add("replace-one (the unit's content changes, the set of examples stays)")
        elif e.mechanism == "joint_convexity_gaussian":
            rels.add("replace-one inside a coupled bucket (joint convexity)")
        else:
            rels.add("add/remove of one unit")
    return sorted(rels) or ["add/remove of one unit"]


def guarantee_reasons(ledger: PrivacyLedger, *, non_private: bool, reproducible_seed_used: bool,
                      epsilon: float | None, epsilon_budget: float | None) -> list[str]:
    """Every reason the guarantee is ``none`` (empty list: proved)."""
    from graphrelease.privacy.proofs import missing_proofs

    reasons = []
    if non_private:
        reasons.append("non-private run (epsilon = inf): no differential privacy guarantee")
    reasons += [f"unsound mechanism — {r}" for r in ledger.unsound_reasons()]
    if reproducible_seed_used:
        reasons.append("a reproducible seed was used: the noise is known to anyone who knows the seed")
    reasons += missing_proofs(ledger)
    if not non_private and epsilon is None:
        reasons.append("epsilon is infinite (a mechanism without noise is in the ledger)")
    if epsilon is not None and epsilon_budget is not None and epsilon > epsilon_budget * (1 + 1e-9):
        reasons.append(f"spent epsilon {epsilon:.6g} exceeds the budget {epsilon_budget:.6g}")
    return reasons


def _preprocessing_reasons(extra: Mapping[str, Any]) -> list[str]:
    """Steps outside the ledger that void the proof, declared by the method in ``extra["unsound_preprocessing"]``
    (e.g. a degree-cap projection that is not node-stable and actually dropped edges)."""
    return [f"unsound preprocessing — {r}" for r in extra.get("unsound_preprocessing", []) or []]


def _dp_sgd(ledger: PrivacyLedger, accountant: str, extra: Mapping[str, Any]) -> DPSGDChecklist | None:
    sgd = [e for e in ledger if e.mechanism in ("subsampled_gaussian", "joint_convexity_gaussian",
                                                "relational_coupled")]
    if not sgd:
        return None
    return DPSGDChecklist(
        checklist="How to DP-fy ML (Ponomareva et al. 2023) Sec. 5.3; NIST SP 800-226",
        privacy_unit=f"{ledger.adjacency.name}: {ledger.adjacency.describe()}",
        accounting=f"{accountant} (headline) with rdp beside it; composition over the whole ledger",
        batch_sampling=sorted({_sampling_scheme(e) for e in sgd}),
        sample_rates=sorted({float(e.params.get("sample_rate", e.params.get("pair_rate", 1.0))) for e in sgd}),
        noise_multipliers=sorted({float(e.params.get("noise_multiplier", 0.0)) for e in sgd}),
        steps=int(sum(e.count for e in sgd)),
        clipping=str(extra.get("clipping", "per-example L2 clipping to max_grad_norm; sensitivity is recorded per "
                                           "ledger entry in units of max_grad_norm")),
        hyperparameters_tuned_on_private_data=str(extra.get("hyperparameters_tuned_on_private_data",
                                                            "not declared by the caller")),
        final_model_selection=str(extra.get("final_model_selection", "last iterate (no selection on private data "
                                                                     "declared by the caller)")),
    )


def _tool_version() -> str:
    try:
        from graphrelease import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"


def epsilon_table(ledger: PrivacyLedger | list[LedgerEntry], deltas) -> list[EpsilonAtDelta]:
    rows = []
    for d in sorted(set(float(x) for x in deltas), reverse=True):
        rows.append(EpsilonAtDelta(delta=d, pld=_finite(compute_epsilon(ledger, d, "pld")),
                                   rdp=_finite(compute_epsilon(ledger, d, "rdp"))))
    return rows


def build_certificate(*, budget, method: str, mode: str, artifacts: Mapping[str, str],
                      public_assumptions: Mapping[str, str], released: list[str],
                      reproducible_seed_used: bool = False, extra: Mapping[str, Any] | None = None) -> dict:
    """Render the certificate of a run as a JSON-able dict (validated against :class:`Certificate`).

    ``artifacts`` maps release-relative paths to SHA-256 (as passed by ``ReleaseWriter.finalize``);
    ``public_assumptions`` says what was treated as public; ``extra`` may hold ``input_hmac_sha256`` (from
    :func:`graphrelease.privacy.binding.input_hmac`) and DP-SGD checklist answers (``clipping``,
    ``hyperparameters_tuned_on_private_data``, ``final_model_selection``). Seeds, noise and plain hashes of the input
    must not be passed (a key named like one is refused).
    """
    extra = dict(extra or {})
    for k in extra:
        low = k.lower()
        if low in ("seed", "noise", "input_sha256", "input_hash") or low.endswith("_seed"):
            raise OptionError(f"certificate extra '{k}': seeds, noise and plain input hashes never go into a release")
    ledger: PrivacyLedger = budget.ledger
    non_private = bool(getattr(budget, "is_unlimited", False))
    delta = float(budget.delta)
    accountant = budget.accountant
    if len(ledger):
        headline = analyse(ledger, delta, accountant)
        eps = _finite(headline.epsilon)
        method_used = headline.method
        epsilons = {"pld": _finite(compute_epsilon(ledger, delta, "pld")),
                    "rdp": _finite(compute_epsilon(ledger, delta, "rdp"))}
        table = epsilon_table(ledger, (*REPORT_DELTAS, delta))
    else:
        eps, method_used = (None, "none: non-private") if non_private else (0.0, "empty ledger")
        epsilons = {"pld": eps, "rdp": eps}
        table = [EpsilonAtDelta(delta=d, pld=eps, rdp=eps) for d in sorted(set((*REPORT_DELTAS, delta)),
                                                                           reverse=True)]
    if non_private:
        eps = None
    budget_eps = None if math.isinf(budget.epsilon) else float(budget.epsilon)
    reasons = guarantee_reasons(ledger, non_private=non_private, reproducible_seed_used=reproducible_seed_used,
                                epsilon=eps, epsilon_budget=budget_eps)
    reasons += _preprocessing_reasons(extra)
    guarantee = "none" if reasons else "proved"
    adjacency: Adjacency = ledger.adjacency
    hmac_value = extra.get("input_hmac_sha256")
    accs = {name: AccountantInfo(**get_accountant(name).describe()) for name in ("pld", "rdp")}
    eps_text = "no finite epsilon" if eps is None else f"({eps:.4g}, {delta:g})-DP"
    summary = (
        f"{method} ({mode}) under {adjacency.name} adjacency — {adjacency.describe()}. "
        f"Guarantee: {guarantee}{' (' + '; '.join(reasons) + ')' if reasons else ''}. "
        f"Spent: {eps_text} by the {accountant} accountant"
        + (f" (PLD {epsilons['pld']:.4g}, RDP {epsilons['rdp']:.4g})" if epsilons["pld"] is not None
           and epsilons["rdp"] is not None else "")
        + (f", budget {budget_eps:g}" if budget_eps is not None else "")
        + f"; {len(ledger)} mechanism(s) in the ledger; {len(released)} released artifact(s). "
        "Trust model: central, trusted curator."
    )
    cert = Certificate(
        schema_version=SCHEMA_VERSION,
        tool="graphrelease",
        tool_version=_tool_version(),
        method=str(method),
        mode=str(mode),
        privacy_unit=PrivacyUnit(adjacency=adjacency.name, description=adjacency.describe(),
                                 neighbouring_relations=_relations(ledger)),
        trust_model=TRUST_MODEL,
        non_private=non_private,
        epsilon=eps,
        delta=delta,
        accountant=accountant,
        accounting_method=method_used,
        epsilon_budget=budget_eps,
        epsilons=epsilons,
        epsilon_at_deltas=table,
        accountants=accs,
        ledger=LedgerModel(**ledger.to_dict()),
        sampling_schemes=sorted({_sampling_scheme(e) for e in ledger}),
        public_assumptions={str(k): str(v) for k, v in dict(public_assumptions or {}).items()},
        released=list(released),
        artifacts=dict(artifacts),
        reproducible_seed_used=bool(reproducible_seed_used),
        guarantee=guarantee,
        guarantee_reason="; ".join(reasons) if reasons else "every mechanism is sound, proved in docs/privacy.md, "
                                                            "and accounted; noise from a CSPRNG-seeded generator",
        dp_sgd=_dp_sgd(ledger, accountant, extra),
        input_hmac_sha256=str(hmac_value) if hmac_value else None,
        summary=summary,
        extra=extra,
    )
    return cert.model_dump(mode="json")


# -------------------------------------------------------------------------------------------------- reading


def certificate_ledger(certificate: Mapping[str, Any]) -> PrivacyLedger:
    """The ledger stated in a certificate."""
    try:
        return PrivacyLedger.from_dict(certificate["ledger"])
    except (KeyError, TypeError) as err:
        raise ReleaseError(f"certificate has no readable ledger ({err})") from err


def certificate_epsilon(certificate: Mapping[str, Any]) -> float:
    """The headline epsilon (``inf`` for non-private releases)."""
    eps = certificate.get("epsilon")
    return math.inf if eps is None else float(eps)


def human_summary(certificate: Mapping[str, Any]) -> str:
    """A multi-line, plain-text summary (rendered by ``graphrelease certificate show``)."""
    c = certificate
    lines = [
        f"method          {c.get('method')} ({c.get('mode')})",
        f"guarantee       {c.get('guarantee')} — {c.get('guarantee_reason')}",
        f"privacy unit    {c.get('privacy_unit', {}).get('adjacency')}: {c.get('privacy_unit', {}).get('description')}",
        f"epsilon         {c.get('epsilon')} at delta {c.get('delta')} ({c.get('accountant')}, "
        f"{c.get('accounting_method')}); budget {c.get('epsilon_budget')}",
        f"PLD / RDP       {c.get('epsilons', {}).get('pld')} / {c.get('epsilons', {}).get('rdp')}",
        f"trust model     {c.get('trust_model')}",
    ]
    for row in c.get("epsilon_at_deltas", []):
        lines.append(f"  delta {row['delta']:<8g} pld {row['pld']}  rdp {row['rdp']}")
    lines.append("mechanisms:")
    for e in c.get("ledger", {}).get("entries", []):
        lines.append(f"  {e['stage']}: {e['mechanism']} x{e['count']} {e['params']} sensitivity {e['sensitivity']} "
                     f"group {e['group_size']} proof #{e['proof']}{'' if e['sound'] else ' UNSOUND'}")
    if c.get("public_assumptions"):
        lines.append("treated as public:")
        lines += [f"  {k}: {v}" for k, v in c["public_assumptions"].items()]
    lines.append("released:")
    lines += [f"  {k}  sha256 {v}" for k, v in sorted(c.get("artifacts", {}).items())]
    lines.append(str(c.get("summary", "")))
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------- verifying


@dataclass
class VerifyReport:
    """Result of :func:`verify_release`: ``ok`` is True only when ``problems`` is empty."""

    release: str
    problems: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    recomputed: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def independent_rdp_epsilon(ledger: PrivacyLedger, delta: float) -> tuple[float, list[str]]:
    """RDP epsilon through dp-accounting's own ``RdpAccountant`` and its own conversion, where it has the mechanism.

    Returns ``(epsilon, notes)``; notes name the entries for which no independent implementation exists (their RDP
    curve then comes from :mod:`graphrelease.privacy.analysis`).
    """
    import numpy as np
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    from graphrelease.privacy.accountants import entry_rdp, pure_total
    from graphrelease.privacy.analysis.rdp import DEFAULT_ORDERS

    orders = list(DEFAULT_ORDERS)
    total = np.zeros(len(orders))
    notes = []
    for e in ledger:
        p, g, s = e.params, e.group_size, float(e.sensitivity)
        acc, event = None, None
        if e.mechanism == "gaussian":
            acc = dpa.RdpAccountant(orders)
            event = dp_event.GaussianDpEvent(float(p["noise_multiplier"]) / (s * g))
        elif e.mechanism == "subsampled_gaussian":
            sampling = str(p.get("sampling", "poisson"))
            nb = str(p.get("neighboring", "add_remove"))
            sigma = float(p["noise_multiplier"]) / (s * g)
            if sampling == "wor" and g == 1:
                n = int(p["dataset_size"])
                b = int(round(float(p["sample_rate"]) * n)) if "sample_rate" in p else int(p["batch_size"])
                acc = dpa.RdpAccountant(orders, NeighboringRelation.REPLACE_ONE)
                event = dp_event.SampledWithoutReplacementDpEvent(n, b, dp_event.GaussianDpEvent(sigma))
            elif sampling in ("poisson", "none") and nb == "add_remove":
                q = 1.0 if sampling == "none" else float(p["sample_rate"])
                q_g = 1.0 - (1.0 - q) ** g
                acc = dpa.RdpAccountant(orders)
                event = dp_event.PoissonSampledDpEvent(q_g, dp_event.GaussianDpEvent(sigma))
        elif e.mechanism == "laplace" and g == 1:
            acc = dpa.RdpAccountant(orders)
            event = dp_event.LaplaceDpEvent(1.0 / float(p["epsilon"]))
        if acc is not None:
            acc.compose(event, e.count)
            # dp-accounting has no public accessor for the RDP curve; summing curves across accountants of different
            # neighbouring relations (add/remove and replace-one entries in one ledger) needs it.
            total = total + np.asarray(acc._rdp)
        else:
            notes.append(f"{e.stage} ({e.mechanism}): no independent implementation; own RDP analysis used")
            total = total + entry_rdp(e, orders)
    eps, _ = dpa.compute_epsilon(orders, total, delta)
    pure = pure_total(ledger.entries)
    if pure is not None:
        eps = min(eps, pure)
    return float(eps), notes


def _close(a: float | None, b: float | None, rel: float = _REL_TOL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-9


def verify_release(release_dir: str | Path, *, input_graph=None, key: bytes | str | Path | None = None,
                   signer_key: str | Path | None = None, input_options: Mapping[str, Any] | None = None
                   ) -> VerifyReport:
    """Re-check a release (see module docstring). ``input_graph``: a Graph/GraphCollection or a path to read
    (with ``input_options`` for :func:`graphrelease.io.read_graph`, e.g. ``nodes``); ``key``: the key bytes or the
    key file path. Both or neither. ``signer_key``: the issuer's Ed25519 public key (a ``.pub`` file or hex); the
    release must then be signed by it."""
    from graphrelease.release import check_manifest, read_release

    root = Path(release_dir)
    report = VerifyReport(release=str(root))
    release = read_release(root)
    cert, manifest = release["certificate"], release["manifest"]

    # 1. artifacts: manifest vs files, certificate vs manifest
    problems = check_manifest(root)
    report.problems += problems
    report.checks.append(f"manifest: {len(manifest.get('artifacts', {}))} artifact(s) re-hashed")
    listed = {k: v.get("sha256") for k, v in manifest.get("artifacts", {}).items()}
    stated = cert.get("artifacts", {}) if isinstance(cert.get("artifacts"), dict) else {}
    for rel in sorted(set(listed) | set(stated)):
        if listed.get(rel) != stated.get(rel):
            report.problems.append(f"{rel}: certificate and manifest disagree on the SHA-256 (or one omits it)")
    report.checks.append("certificate artifact hashes compared with the manifest")

    # 2. schema
    try:
        Certificate.model_validate(cert)
        report.checks.append(f"certificate matches schema {SCHEMA_VERSION}")
    except ValidationError as err:
        report.problems.append(f"certificate does not match its schema: {str(err).splitlines()[0]} "
                               f"({err.error_count()} error(s))")
        return report

    # 3. epsilon recomputed from the ledger
    try:
        ledger = certificate_ledger(cert)
    except Exception as err:  # a tampered ledger can be malformed in many ways; all of them fail verification
        report.problems.append(f"ledger cannot be read: {err}")
        return report
    from graphrelease.privacy.sensitivities import entry_problems

    entry_checks = [msg for e in ledger for msg in entry_problems(e, ledger.adjacency.kind.value, ledger.adjacency.k)]
    report.problems += entry_checks
    report.checks.append(f"{len(ledger)} ledger entr{'y' if len(ledger) == 1 else 'ies'} recomputed from their "
                         "parameters (Laplace scale, proved sensitivities)")
    delta = float(cert["delta"])
    non_private = bool(cert.get("non_private"))
    try:
        if len(ledger):
            pld = _finite(compute_epsilon(ledger, delta, "pld"))
            rdp = _finite(compute_epsilon(ledger, delta, "rdp"))
            independent, notes = independent_rdp_epsilon(ledger, delta)
        else:
            pld = rdp = independent = (None if non_private else 0.0)
            notes = []
    except Exception as err:  # noqa: BLE001 - any failure to account means the ledger cannot be trusted
        report.problems.append(f"ledger cannot be accounted: {type(err).__name__}: {err}")
        return report
    report.recomputed = {"pld": pld, "rdp": rdp, "independent_rdp": independent, "notes": notes}
    if not _close(pld, cert["epsilons"].get("pld")):
        report.problems.append(f"stated PLD epsilon {cert['epsilons'].get('pld')} != recomputed {pld}")
    if not _close(rdp, cert["epsilons"].get("rdp")):
        report.problems.append(f"stated RDP epsilon {cert['epsilons'].get('rdp')} != recomputed {rdp}")
    stated_rdp = cert["epsilons"].get("rdp")
    if independent is not None and stated_rdp is not None and stated_rdp < independent * (1 - _INDEPENDENT_TOL):
        report.problems.append(
            f"stated RDP epsilon {stated_rdp} is below the independent dp-accounting value {independent:.6g}")
    headline = {"pld": pld, "rdp": rdp}.get(cert["accountant"])
    if not non_private:
        if cert["accountant"] == "pld" and len(ledger):
            headline = _finite(analyse(ledger, delta, "pld").epsilon)
        if not _close(headline, cert.get("epsilon")):
            report.problems.append(f"stated epsilon {cert.get('epsilon')} != recomputed {headline} "
                                   f"({cert['accountant']} accountant)")
    budget = cert.get("epsilon_budget")
    if budget is not None and headline is not None and headline > float(budget) * (1 + 1e-9):
        report.problems.append(f"recomputed epsilon {headline:.6g} exceeds the stated budget {budget}")
    for row in cert.get("epsilon_at_deltas", []):
        if not len(ledger):
            break
        d = float(row["delta"])
        for acc in ("pld", "rdp"):
            value = _finite(compute_epsilon(ledger, d, acc))
            if not _close(value, row.get(acc)):
                report.problems.append(f"epsilon at delta {d:g} ({acc}): stated {row.get(acc)} != recomputed {value}")
    report.checks.append(f"epsilon recomputed from the ledger: pld {pld}, rdp {rdp}, independent rdp {independent}")

    # 4. guarantee
    reasons = guarantee_reasons(ledger, non_private=non_private,
                                reproducible_seed_used=bool(cert.get("reproducible_seed_used")),
                                epsilon=headline if not non_private else None,
                                epsilon_budget=None if budget is None else float(budget))
    reasons += _preprocessing_reasons(cert.get("extra") or {})
    expected = "none" if reasons else "proved"
    if cert.get("guarantee") != expected:
        report.problems.append(f"guarantee stated '{cert.get('guarantee')}' but recomputed '{expected}'"
                               + (f" ({'; '.join(reasons)})" if reasons else ""))
    report.checks.append(f"guarantee recomputed: {expected}")

    # 5. signature
    from graphrelease.privacy.signing import check_signature, load_public_key

    expected_key = None if signer_key is None else load_public_key(signer_key)
    sig_problems, sig_check = check_signature(root, cert, expected_key)
    report.problems += sig_problems
    if sig_check:
        report.checks.append(sig_check)

    # 6. input binding
    if (input_graph is None) != (key is None):
        raise OptionError("verify the input binding with both --input and --key (or neither)")
    if input_graph is not None:
        from graphrelease.privacy.binding import load_key, verify_hmac

        if isinstance(input_graph, (str, Path)):
            from graphrelease.io import read_graph

            input_graph = read_graph(input_graph, **dict(input_options or {})).data
        key_bytes = key if isinstance(key, (bytes, bytearray)) else load_key(key)
        stated_hmac = cert.get("input_hmac_sha256") or cert.get("extra", {}).get("input_hmac_sha256")
        if not stated_hmac:
            report.problems.append("the certificate carries no input binding (input_hmac_sha256)")
        elif not verify_hmac(input_graph, bytes(key_bytes), stated_hmac):
            report.problems.append("input binding does not match: wrong input graph or wrong key")
        else:
            report.checks.append("input binding (HMAC-SHA256) matches")
    return report

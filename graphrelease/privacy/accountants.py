r"""Accountants: compose a :class:`~graphrelease.privacy.ledger.PrivacyLedger` into (epsilon, delta).

Two accountants, always both computable for every ledger:

``pld``  (default) privacy loss distributions with dp-accounting's pessimistic discretisation (an upper bound).
         Entries that have no PLD analysis here (sampling without replacement, the joint-convexity bound, the
         relational coupled-sampling bound) make the whole ledger fall back to the RDP composition, and the result
         says so (``AccountingResult.method``).
``rdp``  Rényi DP over :data:`~graphrelease.privacy.analysis.rdp.DEFAULT_ORDERS`, converted with Balle et al. 2020,
         Theorem 21.

Approximations that are not upper bounds (the CLT "Gaussian accountant", PRV point estimates) are refused.

How one entry becomes a curve (details and proofs: ``docs/privacy.md``):

* ``gaussian``: L2 distance ``sensitivity * group_size``; RDP :math:`\alpha d^2/(2\sigma^2)`; exact PLD.
* ``subsampled_gaussian`` with ``sampling="poisson"``: ``sensitivity`` bounds ONE example's contribution (in units of
  the clipping bound). ``add_remove`` uses the sampled-Gaussian pair; ``replace_one`` uses the replace pair
  :math:`(qN(s)+(1-q)N(0), qN(-s)+(1-q)N(0))`. A group of ``g`` examples is handled as one super-example sampled with
  probability :math:`1-(1-q)^g` and bound :math:`g s` (joint convexity; ``docs/privacy.md#group-privacy``).
* ``subsampled_gaussian`` with ``sampling="wor"``: replace-one only (the dataset size is public), Wang-Balle-
  Kasiviswanathan Theorem 27, RDP only; group size must be 1.
* ``laplace`` / ``exponential`` / ``gumbel_topk`` / ``permute_and_flip``: pure DP with ``epsilon`` per invocation
  (times ``group_size``); exact Laplace RDP, bounded-range RDP for exponential and Gumbel (``k`` compositions),
  generic pure-DP RDP for permute-and-flip (report-noisy-max with exponential noise is not bounded range); PLD of
  pure DP.
* ``joint_convexity_gaussian``: PRIVACY.md option B with distance ``2 * sensitivity``; RDP only.
* ``relational_coupled``: :mod:`graphrelease.privacy.analysis.relational`; RDP only.

Example
-------
>>> from graphrelease.privacy.ledger import LedgerEntry
>>> e = LedgerEntry(mechanism="subsampled_gaussian", stage="demo", count=1000,
...                 params={"noise_multiplier": 1.0, "sample_rate": 0.01, "sampling": "poisson",
...                         "neighboring": "add_remove"})
>>> round(compute_epsilon([e], 1e-5, accountant="rdp"), 4)
2.1014
"""

from __future__ import annotations

import functools
import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Iterable, Sequence

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.privacy.analysis import pld as pld_analysis
from graphrelease.privacy.analysis import rdp as rdp_analysis
from graphrelease.privacy.ledger import LedgerEntry, PrivacyLedger

#: Mechanism names the accountants understand (see the ledger docstring for their parameters).
MECHANISMS = (
    "gaussian",
    "subsampled_gaussian",
    "laplace",
    "exponential",
    "gumbel_topk",
    "permute_and_flip",
    "joint_convexity_gaussian",
    "relational_coupled",
)

#: Default delta grid reported beside the chosen delta.
REPORT_DELTAS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


@dataclass(frozen=True)
class AccountingResult:
    """Epsilon of a ledger at one delta, with how it was obtained."""

    accountant: str
    epsilon: float
    delta: float
    method: str
    best_order: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------------- entries


def _as_entries(ledger_or_entries: PrivacyLedger | LedgerEntry | Iterable[LedgerEntry]) -> tuple[LedgerEntry, ...]:
    if isinstance(ledger_or_entries, LedgerEntry):
        return (ledger_or_entries,)
    if isinstance(ledger_or_entries, PrivacyLedger):
        return ledger_or_entries.entries
    entries = tuple(ledger_or_entries)
    for e in entries:
        if not isinstance(e, LedgerEntry):
            raise OptionError(f"accountants compose LedgerEntry objects, got {type(e).__name__}")
    return entries


def _param(entry: LedgerEntry, name: str, kind: type = float, default: Any = None) -> Any:
    if name not in entry.params:
        if default is not None:
            return default
        raise OptionError(
            f"ledger entry '{entry.stage}' ({entry.mechanism}) lacks parameter '{name}' "
            f"(has: {', '.join(sorted(entry.params)) or 'none'})"
        )
    value = entry.params[name]
    try:
        return kind(value)
    except (TypeError, ValueError) as err:
        raise OptionError(f"ledger entry '{entry.stage}': parameter {name}={value!r} is not a {kind.__name__}") from err


def _nonneg(entry: LedgerEntry, name: str, value: float, upper: float | None = None) -> float:
    if not (value >= 0) or (upper is not None and value > upper) or math.isnan(value):
        rng = f"[0, {upper}]" if upper is not None else ">= 0"
        raise OptionError(f"ledger entry '{entry.stage}': {name} must be in {rng}, got {value!r}")
    return value


@dataclass(frozen=True)
class _Spec:
    """One entry reduced to a canonical analysis: ``kind`` plus numbers. ``count`` is applied by the caller."""

    kind: str  # gaussian | poisson_ar | poisson_ro | wor_ro | laplace | pure | br | jc | relational
    sigma: float = 0.0  # effective noise multiplier (noise std / L2 distance unit of the pair)
    rate: float = 1.0
    sensitivity: float = 1.0
    epsilon: float = 0.0
    repeats: int = 1  # inner compositions (Gumbel top-k: k)
    relational: tuple = ()


def _spec(entry: LedgerEntry) -> _Spec:
    m, g, s = entry.mechanism, entry.group_size, float(entry.sensitivity)
    if m == "gaussian":
        sigma = _nonneg(entry, "noise_multiplier", _param(entry, "noise_multiplier"))
        return _Spec("gaussian", sigma=sigma, sensitivity=s * g)
    if m == "subsampled_gaussian":
        sigma = _nonneg(entry, "noise_multiplier", _param(entry, "noise_multiplier"))
        sampling = str(entry.params.get("sampling", "poisson")).lower()
        neighboring = str(entry.params.get("neighboring", "add_remove")).lower().replace("-", "_")
        if neighboring not in ("add_remove", "replace_one"):
            raise OptionError(
                f"ledger entry '{entry.stage}': neighboring must be add_remove or replace_one, got {neighboring!r}"
            )
        if sampling == "wor":
            if "sample_rate" in entry.params:
                q = _param(entry, "sample_rate")
            else:
                q = _param(entry, "batch_size") / _param(entry, "dataset_size")
            q = _nonneg(entry, "sample_rate", q, 1.0)
            if neighboring != "replace_one":
                raise OptionError(
                    f"ledger entry '{entry.stage}': sampling without replacement is analysed under replace-one only "
                    "(the dataset size is public); use sampling='poisson' for add/remove adjacency"
                )
            if g != 1:
                raise OptionError(
                    f"ledger entry '{entry.stage}': group_size={g} with sampling without replacement has no analysis "
                    "here; use Poisson sampling (group privacy via the super-example bound)"
                )
            return _Spec("wor_ro", sigma=sigma / s, rate=q, sensitivity=1.0)
        if sampling not in ("poisson", "none"):
            raise OptionError(f"ledger entry '{entry.stage}': sampling must be poisson, wor or none, got {sampling!r}")
        q = 1.0 if sampling == "none" else _nonneg(entry, "sample_rate", _param(entry, "sample_rate"), 1.0)
        # Group of g examples = one super-example present with prob 1-(1-q)^g and bound g*s (docs: group-privacy).
        q_g = -math.expm1(g * math.log1p(-q)) if q < 1.0 else 1.0
        kind = "poisson_ar" if neighboring == "add_remove" else "poisson_ro"
        return _Spec(kind, sigma=sigma, rate=q_g, sensitivity=s * g)
    if m in ("laplace", "exponential", "gumbel_topk", "permute_and_flip"):
        eps = _nonneg(entry, "epsilon", _param(entry, "epsilon"))
        kind = {"laplace": "laplace", "exponential": "br", "gumbel_topk": "br", "permute_and_flip": "pure"}[m]
        k = int(_param(entry, "k", int)) if m == "gumbel_topk" else 1
        if k < 1:
            raise OptionError(f"ledger entry '{entry.stage}': gumbel_topk needs k >= 1, got {k}")
        return _Spec(kind, epsilon=eps * g, repeats=k)
    if m == "joint_convexity_gaussian":
        sigma = _nonneg(entry, "noise_multiplier", _param(entry, "noise_multiplier"))
        p = _nonneg(entry, "pair_rate", _param(entry, "pair_rate"), 1.0)
        if g != 1:
            raise OptionError(
                f"ledger entry '{entry.stage}': joint_convexity_gaussian takes group_size 1 (fold groups into "
                "pair_rate and sensitivity)"
            )
        return _Spec("jc", sigma=sigma, rate=p, sensitivity=2.0 * s)
    if m == "relational_coupled":
        from graphrelease.privacy.analysis import relational

        params = relational.params_from_entry(entry)
        return _Spec("relational", relational=tuple(sorted(params.items())))
    raise OptionError(
        f"ledger entry '{entry.stage}': unknown mechanism {m!r}; the accountants understand: {', '.join(MECHANISMS)}"
    )


def entry_rdp(entry: LedgerEntry, orders: Sequence[float] | None = None) -> np.ndarray:
    """RDP curve of the whole entry (all ``count`` invocations) at ``orders``."""
    spec = _spec(entry)
    return _spec_rdp(spec, tuple(orders or rdp_analysis.DEFAULT_ORDERS)) * entry.count


def _spec_rdp(spec: _Spec, orders: tuple[float, ...]) -> np.ndarray:
    o = list(orders)
    if spec.kind == "gaussian":
        return rdp_analysis.gaussian(spec.sigma / spec.sensitivity, o)
    if spec.kind == "poisson_ar":
        return rdp_analysis.poisson_gaussian_add_remove(spec.rate, spec.sigma / spec.sensitivity, o)
    if spec.kind == "poisson_ro":
        return rdp_analysis.poisson_gaussian_replace_one(spec.rate, spec.sigma / spec.sensitivity, o)
    if spec.kind == "wor_ro":
        return rdp_analysis.wor_gaussian_replace_one(spec.rate, spec.sigma, o)
    if spec.kind == "laplace":
        return rdp_analysis.laplace(spec.epsilon, o)
    if spec.kind == "br":
        return rdp_analysis.bounded_range(spec.epsilon, o) * spec.repeats
    if spec.kind == "pure":
        return rdp_analysis.pure_dp(spec.epsilon, o) * spec.repeats
    if spec.kind == "jc":
        return rdp_analysis.joint_convexity_gaussian(spec.rate, spec.sigma, o, distance=spec.sensitivity)
    if spec.kind == "relational":
        from graphrelease.privacy.analysis import relational

        return relational.rdp_per_step(dict(spec.relational), o)
    raise AssertionError(spec.kind)  # pragma: no cover - _spec only builds the kinds above


def _spec_pld(spec: _Spec, count: int):
    """PLD of ``count`` invocations, or ``None`` when the analysis is RDP-only."""
    if spec.kind == "gaussian":
        if spec.sigma == 0:
            return "non-private"
        return pld_analysis.gaussian(spec.sigma, spec.sensitivity, count)
    if spec.kind in ("poisson_ar", "poisson_ro"):
        if spec.rate == 0:
            return pld_analysis.identity()
        if spec.sigma == 0:
            return "non-private"
        neighboring = "add_remove" if spec.kind == "poisson_ar" else "replace_one"
        return pld_analysis.poisson_gaussian(
            spec.rate, spec.sigma, sensitivity=spec.sensitivity, neighboring=neighboring
        ).self_compose(count)
    if spec.kind == "laplace":
        if spec.epsilon == 0:
            return pld_analysis.identity()
        return pld_analysis.laplace(spec.epsilon).self_compose(count)
    if spec.kind in ("br", "pure"):
        if spec.epsilon == 0:
            return pld_analysis.identity()
        return pld_analysis.pure_dp(spec.epsilon).self_compose(count * spec.repeats)
    return None


# ----------------------------------------------------------------------------------------------------- accountants


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("dp-accounting", "opacus", "autodp"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - all three are pinned dependencies
            out[pkg] = "not installed"
    return out


class Accountant(ABC):
    """Composes ledger entries. Subclasses are pure bookkeeping over :mod:`graphrelease.privacy.analysis`."""

    name: str = ""

    @abstractmethod
    def analyse(self, entries: Sequence[LedgerEntry], delta: float) -> AccountingResult: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Name, library versions and the grid (RDP orders or PLD discretisation), for the certificate."""

    def epsilon(self, ledger_or_entries, delta: float) -> float:
        return self.analyse(_as_entries(ledger_or_entries), _check_delta(delta)).epsilon


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise OptionError(f"delta must be in (0, 1), got {delta!r}")
    return delta


class RDPAccountant(Accountant):
    """Rényi DP composition (sum of curves) and Balle et al. 2020 Theorem 21 conversion."""

    name = "rdp"

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        self.orders = tuple(float(o) for o in (orders or rdp_analysis.DEFAULT_ORDERS))

    def curve(self, entries: Sequence[LedgerEntry]) -> np.ndarray:
        total = np.zeros(len(self.orders))
        for e in entries:
            if e.count:
                total = total + entry_rdp(e, self.orders)
        return total

    def analyse(self, entries: Sequence[LedgerEntry], delta: float) -> AccountingResult:
        entries = _as_entries(entries)
        if not entries:
            return AccountingResult(self.name, 0.0, delta, "rdp: empty ledger")
        pure = pure_total(entries)
        if chosen_adaptively(entries):  # raises unless the whole ledger is pure DP
            return AccountingResult(self.name, pure, delta, ADAPTIVE_FILTER_NOTE)
        eps, best = rdp_analysis.rdp_to_epsilon(self.curve(entries), delta, self.orders)
        if pure is not None and pure < eps:
            return AccountingResult(self.name, pure, delta, "pure-dp basic composition (<= rdp)")
        return AccountingResult(self.name, eps, delta, "rdp", best_order=best)

    def describe(self) -> dict[str, Any]:
        v = _versions()
        return {
            "name": "rdp",
            "description": "Rényi DP composition; RDP -> (eps, delta) by Balle et al. 2020, Theorem 21",
            "library": f"opacus {v['opacus']} (sampled Gaussian), dp-accounting {v['dp-accounting']} (WOR, Laplace)",
            "versions": v,
            "orders": list(self.orders),
        }


class PLDAccountant(Accountant):
    """Privacy loss distributions (dp-accounting), pessimistic discretisation; RDP fallback when needed."""

    name = "pld"

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        self._rdp = RDPAccountant(orders)

    def analyse(self, entries: Sequence[LedgerEntry], delta: float) -> AccountingResult:
        entries = _as_entries(entries)
        if not entries:
            return AccountingResult(self.name, 0.0, delta, "pld: empty ledger")
        pure = pure_total(entries)
        if chosen_adaptively(entries):  # raises unless the whole ledger is pure DP
            return AccountingResult(self.name, pure, delta, ADAPTIVE_FILTER_NOTE)
        key = json.dumps([e.to_dict() for e in entries], sort_keys=True, default=str)
        composed = _composed_pld(key)
        if composed is None:
            unsupported = sorted({e.mechanism for e in entries if _spec_pld_supported(e) is False})
            res = self._rdp.analyse(entries, delta)
            return AccountingResult(
                self.name,
                res.epsilon,
                delta,
                "rdp-fallback",
                best_order=res.best_order,
                details={"reason": f"no PLD analysis for: {', '.join(unsupported)}; composed with RDP"},
            )
        if composed == "non-private":
            return AccountingResult(self.name, math.inf, delta, "pld: a mechanism has zero noise")
        eps = max(float(composed.get_epsilon_for_delta(delta)), 0.0)
        pure = pure_total(entries)
        if pure is not None and pure < eps:
            # All entries pure DP: basic composition is also an upper bound and beats discretisation slack.
            return AccountingResult(self.name, pure, delta, "pure-dp basic composition (<= pld)")
        return AccountingResult(self.name, eps, delta, "pld")

    def describe(self) -> dict[str, Any]:
        v = _versions()
        return {
            "name": "pld",
            "description": "privacy loss distribution composition (pessimistic discretisation, an upper bound); "
            "falls back to RDP for ledgers with RDP-only analyses",
            "library": f"dp-accounting {v['dp-accounting']}",
            "versions": v,
            "value_discretization_interval": pld_analysis.VALUE_DISCRETIZATION_INTERVAL,
        }


#: How a ledger whose shares were chosen from earlier releases is certified (``Budget.shares_chosen_from_releases``).
ADAPTIVE_FILTER_NOTE = ("pure-dp privacy filter: later shares were chosen from earlier releases, so the sum of pure "
                        "epsilons (valid for every branch) is certified, not the composition of the realised ledger")


def chosen_adaptively(entries: Sequence[LedgerEntry]) -> bool:
    """True when some entry's share was chosen from earlier releases (see ``Budget.shares_chosen_from_releases``).

    Such a ledger must be pure DP throughout: only the pure-DP filter is certified for it. Composing the realised
    ledger of a mixed one (adaptive pure shares next to Gaussian or subsampled entries) by PLD or RDP is not a
    bound for every branch, so it is refused rather than silently composed."""
    adaptive = any(bool(e.params.get("adaptive_share")) for e in entries)
    if adaptive and pure_total(entries) is None:
        mixed = sorted({e.mechanism for e in entries if _spec(e).kind not in ("laplace", "br", "pure")})
        raise OptionError(f"ledger mixes shares chosen from earlier releases with {', '.join(mixed)} entries: only a "
                          "pure-DP ledger can be certified by the privacy filter; spend them from separate budgets")
    return adaptive


def pure_total(entries: Sequence[LedgerEntry]) -> float | None:
    """Sum of per-invocation epsilons when every entry is pure DP (laplace/exponential/gumbel_topk/permute_and_flip),
    else None."""
    total = 0.0
    for e in entries:
        spec = _spec(e)
        if spec.kind not in ("laplace", "br", "pure"):
            return None
        total += spec.epsilon * spec.repeats * e.count
    return total


def _spec_pld_supported(entry: LedgerEntry) -> bool:
    return _spec(entry).kind not in ("wor_ro", "jc", "relational")


@functools.lru_cache(maxsize=256)
def _composed_pld(key: str):
    entries = [LedgerEntry.from_dict(d) for d in json.loads(key)]
    if not all(_spec_pld_supported(e) for e in entries):
        return None
    total = None
    for e in entries:
        if e.count == 0:
            continue
        p = _spec_pld(_spec(e), e.count)
        if isinstance(p, str):
            return p
        total = p if total is None else total.compose(p)
    return total if total is not None else pld_analysis.identity()


#: Registry: accountant name -> class.
ACCOUNTANTS: dict[str, type[Accountant]] = {"pld": PLDAccountant, "rdp": RDPAccountant}


def get_accountant(name: str = "pld") -> Accountant:
    """Instantiate an accountant by registry name (``pld`` or ``rdp``)."""
    key = str(name).lower()
    if key in ("gdp", "clt", "gaussian", "prv-estimate"):
        raise OptionError(
            f"accountant {name!r} is an approximation, not an upper bound on epsilon; use 'pld' or 'rdp'"
        )
    if key not in ACCOUNTANTS:
        raise OptionError(f"unknown accountant {name!r}; choose one of: {', '.join(ACCOUNTANTS)}")
    return ACCOUNTANTS[key]()


def analyse(ledger_or_entries, delta: float, accountant: str = "pld") -> AccountingResult:
    """Full :class:`AccountingResult` (epsilon plus how it was obtained)."""
    return get_accountant(accountant).analyse(_as_entries(ledger_or_entries), _check_delta(delta))


def compute_epsilon(ledger_or_entries, delta: float, accountant: str = "pld") -> float:
    """Epsilon of a ledger (or entries) at ``delta`` with the named accountant (``pld`` default, or ``rdp``)."""
    return analyse(ledger_or_entries, delta, accountant).epsilon


def compute_epsilons(ledger_or_entries, delta: float) -> dict[str, float]:
    """Both accountants side by side: ``{"pld": eps, "rdp": eps}``."""
    return {name: compute_epsilon(ledger_or_entries, delta, name) for name in ACCOUNTANTS}


def compute_delta(ledger_or_entries, epsilon: float, accountant: str = "rdp") -> float:
    """Smallest delta at which the ledger is ``epsilon``-DP (RDP conversion, or PLD hockey-stick)."""
    entries = _as_entries(ledger_or_entries)
    if not entries:
        return 0.0
    pure = pure_total(entries)
    if chosen_adaptively(entries):  # raises unless the whole ledger is pure DP
        return 0.0 if pure <= float(epsilon) else 1.0  # only the pure filter bound is certified for such a ledger
    if accountant == "pld":
        key = json.dumps([e.to_dict() for e in entries], sort_keys=True, default=str)
        composed = _composed_pld(key)
        if composed is not None and not isinstance(composed, str):
            return float(min(1.0, composed.get_delta_for_epsilon(float(epsilon))))
        if composed == "non-private":
            return 1.0
    acc = RDPAccountant()
    return rdp_analysis.rdp_to_delta(acc.curve(entries), float(epsilon), acc.orders)


def accountant_versions() -> dict[str, str]:
    """Versions of the accounting libraries (for the certificate)."""
    return _versions()

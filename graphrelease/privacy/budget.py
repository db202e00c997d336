"""Budgets: a run never spends more than asked.

A :class:`Budget` owns the run's :class:`~graphrelease.privacy.ledger.PrivacyLedger`. Mechanisms call
:meth:`Budget.charge` BEFORE releasing a noisy value; the charge records the entry only if the composed ledger still
meets ``(epsilon, delta)`` under the budget's accountant, otherwise it raises :class:`~graphrelease.errors.BudgetError`
and records nothing (OpenDP's "privacy allowance has been exhausted" pattern: a spent budget raises, it does not warn).

Charging one DP-SGD step at a time is cheap: identical one-step charges probe ahead (doubling, then bisecting towards
the first known failure), so T steps cost O(log T) accountant calls; a bulk charge (``count > 1``) costs one call.

Stage budgets: :meth:`Budget.split` hands out child budgets (fractions of epsilon and delta, basic composition) that
record into the parent's one ledger and are checked against both their own share and the parent's total. For
Gaussian stages, :func:`graphrelease.privacy.calibration.calibrate_stage_noise` is tighter: it calibrates all
stages' noise jointly against the parent's total.

Example
-------
>>> from graphrelease.privacy.ledger import LedgerEntry
>>> b = Budget(epsilon=1.0, delta=1e-5, adjacency="edge")
>>> step = LedgerEntry(mechanism="subsampled_gaussian", stage="demo", count=1,
...                    params={"noise_multiplier": 1.5, "sample_rate": 0.01, "sampling": "poisson",
...                            "neighboring": "add_remove"})
>>> b.charge(step); len(b.ledger)
1
"""

from __future__ import annotations

import dataclasses
import json
import math
from contextlib import contextmanager
from typing import Iterator, Mapping

from graphrelease.errors import BudgetError, OptionError
from graphrelease.privacy.accountants import AccountingResult, analyse, compute_epsilon, get_accountant
from graphrelease.privacy.adjacency import Adjacency
from graphrelease.privacy.ledger import LedgerEntry, PrivacyLedger

_TOL = 1e-9


def _key(entries) -> str:
    return json.dumps([e.to_dict() for e in entries], sort_keys=True, default=str)


class Budget:
    """A privacy budget ``(epsilon, delta)`` under one adjacency, with the run's ledger.

    Parameters
    ----------
    epsilon, delta:
        The total the run may spend. ``epsilon=float('inf')`` means non-private (see :meth:`unlimited`).
    adjacency:
        The privacy unit (``"edge"``, ``"node"``, ``"k-neighbor:5"``, ``"graph"`` or an :class:`Adjacency`).
    accountant:
        ``"pld"`` (default) or ``"rdp"``; decides what "within budget" means.
    """

    def __init__(self, *, epsilon: float, delta: float, adjacency: Adjacency | str, accountant: str = "pld",
                 ledger: PrivacyLedger | None = None, name: str = "run") -> None:
        from graphrelease.defaults import check_delta, check_epsilon

        epsilon = check_epsilon(epsilon, allow_inf=True)
        delta = float(check_delta(delta))
        get_accountant(accountant)  # validates the name
        self.epsilon = epsilon
        self.delta = delta
        self.adjacency = Adjacency.parse(adjacency)
        self.accountant = str(accountant).lower()
        self.name = name
        if ledger is not None and ledger.adjacency != self.adjacency:
            raise OptionError(
                f"ledger adjacency '{ledger.adjacency}' differs from the budget's adjacency '{self.adjacency}'"
            )
        self.ledger = ledger if ledger is not None else PrivacyLedger(self.adjacency)
        self._parent: Budget | None = None
        self._own: PrivacyLedger | None = None  # a child's own entries (its share is checked on these)
        self._capacity: dict[tuple[str, str], int] = {}
        self._shares_from_releases = False

    # ---------------------------------------------------------------------------------------------- constructors
    @classmethod
    def unlimited(cls, adjacency: Adjacency | str, *, delta: float = 1e-5) -> "Budget":
        """A budget for non-private baselines: nothing is refused; their ledger stays empty and the certificate says
        ``guarantee: none`` (non-private)."""
        return cls(epsilon=math.inf, delta=delta, adjacency=adjacency)

    @property
    def is_unlimited(self) -> bool:
        return math.isinf(self.epsilon) and (self._parent is None or self._parent.is_unlimited)

    # ------------------------------------------------------------------------------------------------- queries
    def _entries(self) -> tuple[LedgerEntry, ...]:
        return (self._own if self._own is not None else self.ledger).entries

    def spent(self, accountant: str | None = None) -> AccountingResult:
        """Accounting result of what this budget (a child: its own share) has recorded, at the budget's delta."""
        return analyse(self._entries(), self.delta, accountant or self.accountant)

    def spent_epsilon(self, accountant: str | None = None) -> float:
        """Epsilon spent so far at the budget's delta (0.0 for an empty ledger)."""
        if not self._entries():
            return 0.0
        return self.spent(accountant).epsilon

    def remaining_fraction(self) -> float:
        """``1 - spent/epsilon`` clipped to [0, 1] (1.0 for an unlimited budget)."""
        if math.isinf(self.epsilon):
            return 1.0
        return float(min(1.0, max(0.0, 1.0 - self.spent_epsilon() / self.epsilon)))

    def max_count(self, entry: LedgerEntry) -> int:
        """How many more invocations of ``entry`` (ignoring its count) fit in this budget and every parent."""
        n = self._max_total(entry) - self._already(entry)
        if self._parent is not None:
            n = min(n, self._parent.max_count(entry))
        return max(0, n)

    def would_exceed(self, entry: LedgerEntry) -> bool:
        """True if recording ``entry`` would take the composed ledger past ``(epsilon, delta)``."""
        if entry.count == 0:
            return False
        if not math.isinf(self.epsilon):
            if not self._fits(entry, self._already(entry) + entry.count):
                return True
        return self._parent.would_exceed(entry) if self._parent is not None else False

    # ------------------------------------------------------------------------------------------------- charging
    @contextmanager
    def shares_chosen_from_releases(self) -> Iterator[None]:
        """Charge the entries of this block as chosen from earlier releases: a method that decides its later
        mechanisms (or their epsilons) from its own earlier outputs composes adaptively, which the PLD and RDP
        composition of the realised ledger does not cover. Entries charged here carry ``adaptive_share`` and the
        accountants then certify the pure-DP privacy filter (the sum of pure epsilons, Rogers et al. 2016), the
        bound that holds for every branch."""
        before = self._shares_from_releases
        self._shares_from_releases = True
        try:
            yield
        finally:
            self._shares_from_releases = before

    def charge(self, entry: LedgerEntry) -> None:
        """Record ``entry`` if the total stays within budget; otherwise raise :class:`BudgetError`, record nothing."""
        if not isinstance(entry, LedgerEntry):
            raise OptionError(f"Budget.charge takes a LedgerEntry, got {type(entry).__name__}")
        if self._shares_from_releases and not entry.params.get("adaptive_share"):
            entry = dataclasses.replace(entry, params={**entry.params, "adaptive_share": True})
        if self.would_exceed(entry):
            spent = self.spent_epsilon()
            raise BudgetError(
                f"budget '{self.name}' exhausted: charging {entry.count} x {entry.mechanism} ({entry.stage}) would "
                f"exceed epsilon={self.epsilon:g} at delta={self.delta:g} (already spent {spent:.4g}); "
                "raise --epsilon, lower the steps, or raise the noise"
            )
        self._record(entry)

    def _record(self, entry: LedgerEntry) -> None:
        if self._parent is not None:
            self._parent._record(entry)  # the shared run ledger
            self._own.record(entry)
        else:
            self.ledger.record(entry)

    # ------------------------------------------------------------------------------------------------- internals
    def _base_and_already(self, entry: LedgerEntry) -> tuple[tuple[LedgerEntry, ...], int]:
        entries = self._entries()
        if entries and entries[-1].same_mechanism(entry):
            return entries[:-1], entries[-1].count
        return entries, 0

    def _already(self, entry: LedgerEntry) -> int:
        return self._base_and_already(entry)[1]

    def _state(self, entry: LedgerEntry) -> tuple[tuple[LedgerEntry, ...], list]:
        """``(base entries, [largest total count known to fit, smallest known not to fit or None])``."""
        base, _ = self._base_and_already(entry)
        key = (_key(base), _key([entry.with_count(1)]))
        return base, self._capacity.setdefault(key, [0, None])

    def _ok(self, base, entry: LedgerEntry, n: int) -> bool:
        eps = compute_epsilon([*base, entry.with_count(n)], self.delta, self.accountant)
        return eps <= self.epsilon * (1 + _TOL)

    def _fits(self, entry: LedgerEntry, need: int) -> bool:
        """Does a total count ``need`` of ``entry`` (after the other entries) fit? Lazy bisection: one-step charges
        probe ahead (doubling, then halving the gap to the known failure), so T steps cost O(log T) accountant
        calls; a bulk charge costs one."""
        base, st = self._state(entry)
        if need <= st[0]:
            return True
        if st[1] is not None and need >= st[1]:
            return False
        if entry.count == 1:
            probe = 2 * max(st[0], need) if st[1] is None else max(need, (st[0] + st[1]) // 2)
        else:
            probe = need
        if self._ok(base, entry, probe):
            st[0] = max(st[0], probe)
            return True
        st[1] = probe if st[1] is None else min(st[1], probe)
        if probe == need:
            return False
        if self._ok(base, entry, need):
            st[0] = max(st[0], need)
            return True
        st[1] = min(st[1], need)
        return False

    def _max_total(self, entry: LedgerEntry) -> int:
        """Largest total count N of ``entry`` after the ledger's other entries that stays within budget."""
        if math.isinf(self.epsilon):
            return 2**62
        base, st = self._state(entry)
        if st[1] is not None and st[1] == st[0] + 1:
            return st[0]
        from graphrelease.privacy.calibration import calibrate

        # the one calibration routine: doubling from what is known to fit (cached between charges), then bisection
        # below what is known not to
        lo = int(calibrate(lambda n: [entry.with_count(int(n))], prior=base,
                           target_epsilon=self.epsilon * (1 + _TOL), delta=self.delta, accountant=self.accountant,
                           solve="steps", lo=max(1, st[0]), hi=(st[1] - 1) if st[1] is not None else 2**40))
        st[0], st[1] = lo, lo + 1
        return lo

    # ----------------------------------------------------------------------------------------------- stage split
    def split(self, fractions: Mapping[str, float]) -> dict[str, "Budget"]:
        """Child budgets ``{stage: Budget}`` with ``epsilon_i = f_i * epsilon`` and ``delta_i = f_i * delta``.

        The fractions must sum to at most 1 (basic composition: the children's (epsilon_i, delta_i) sum to at most
        the total). Children record into this budget's ledger; a child's charge is refused when it would exceed
        either its own share or this budget's total.
        """
        if not fractions:
            raise OptionError("Budget.split needs at least one stage fraction")
        total = 0.0
        for stage, f in fractions.items():
            if not (0.0 < float(f) <= 1.0):
                raise OptionError(f"stage '{stage}': budget fraction must be in (0, 1], got {f!r}")
            total += float(f)
        if total > 1.0 + 1e-9:
            raise OptionError(f"stage budget fractions sum to {total:g} > 1: {dict(fractions)}")
        children = {}
        for stage, f in fractions.items():
            child = Budget(
                epsilon=self.epsilon * float(f), delta=self.delta * float(f), adjacency=self.adjacency,
                accountant=self.accountant, name=f"{self.name}.{stage}",
            )
            child.ledger = self.ledger
            child._own = PrivacyLedger(self.adjacency)
            child._parent = self
            children[stage] = child
        return children

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon if not math.isinf(self.epsilon) else "inf",
            "delta": self.delta,
            "adjacency": self.adjacency.name,
            "accountant": self.accountant,
        }

    def __repr__(self) -> str:
        return (f"Budget(epsilon={self.epsilon:g}, delta={self.delta:g}, adjacency={self.adjacency.name!r}, "
                f"accountant={self.accountant!r}, entries={len(self.ledger)})")


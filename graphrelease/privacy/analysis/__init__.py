"""Pure accountant math: functions over numbers (no ledger, no state, no torch).

``rdp``       Rényi-DP curves of every mechanism the ledger knows, and the RDP -> (epsilon, delta) conversion.
``pld``       privacy loss distributions (dp-accounting) of the same mechanisms.
``relational`` the coupled-sampling bound of the relational-learning seed (Theorem 3), evaluated numerically.

The stateful composition over a :class:`~graphrelease.privacy.ledger.PrivacyLedger` lives in
:mod:`graphrelease.privacy.accountants`.
"""

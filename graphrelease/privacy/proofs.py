"""Proof anchors: does ``docs/privacy.md`` hold a proof sketch for a ledger entry's ``proof`` anchor?

Anchors are explicit ``<a id="ANCHOR"></a>`` lines or GitHub-style heading slugs. The page is read from the
environment variable ``GRAPHRELEASE_PRIVACY_DOCS`` if set, else from ``graphrelease/privacy/proofs.md``. In the
repository that file is a symlink to ``docs/privacy.md``; building a wheel copies the page's content, so a plain
(non-editable) ``pip install`` certifies exactly what a checkout does. If the page cannot be found, no anchor
exists, so every certificate says ``guarantee: none`` — never a silent ``proved``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_ID = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def docs_path() -> Path | None:
    """Location of the proofs page, or None when it cannot be found."""
    env = os.environ.get("GRAPHRELEASE_PRIVACY_DOCS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).with_name("proofs.md"))
    for c in candidates:
        if c.is_file():
            return c
    return None


def slugify(heading: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str | None = None) -> set[str]:
    """All anchors defined in the proofs page (or in ``text``)."""
    if text is None:
        path = docs_path()
        if path is None:
            return set()
        text = path.read_text(encoding="utf-8")
    found = set(_ID.findall(text))
    found |= {slugify(h) for h in _HEADING.findall(text)}
    return found


def normalise(anchor: str) -> str:
    """``docs/privacy.md#x``, ``#x`` and ``x`` all mean anchor ``x``."""
    return str(anchor or "").strip().rsplit("#", 1)[-1].strip()


def has_proof(anchor: str) -> bool:
    """True if ``anchor`` names a section of ``docs/privacy.md``."""
    key = normalise(anchor)
    return bool(key) and key in anchors()


def missing_proofs(ledger_or_entries) -> list[str]:
    """Stages whose entries have no (or an unknown) proof anchor."""
    known = anchors()
    out = []
    for e in ledger_or_entries:
        key = normalise(e.proof)
        if not key or key not in known:
            out.append(f"{e.stage}: no proof sketch '{e.proof or '(none)'}' in docs/privacy.md")
    return out

"""Write the certificate's JSON Schema: ``python -m graphrelease.privacy.certificate_schema [PATH]``
(default ``schemas/certificate.schema.json`` in the repository)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from graphrelease.privacy.certificate import json_schema


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).resolve().parents[2] / "schemas" / "certificate.schema.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

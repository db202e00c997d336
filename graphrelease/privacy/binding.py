"""Binding a release to its input without leaking it: HMAC-SHA256 of the canonical input under a secret key.

A plain hash of the private graph is a deterministic function of it: anyone who knows all edges but one could hash
both completions and learn the last edge. An HMAC under a key that only the data owner holds (the key file is written
BESIDE the release, never inside it) lets the owner later prove which input a release came from
(``graphrelease certificate verify RELEASE --input GRAPH --key KEYFILE``) while revealing nothing to others.

Canonical message: a domain tag, then for every graph its node count and edge count followed by its canonical edge
list (``u < v``, lexicographically sorted, unique; int64 little-endian). Features and labels are not bound.

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g, _ = Graph.from_edges(3, np.array([[0, 1], [1, 2]]))
>>> len(input_hmac(g, b"k" * 32))
64
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import numpy as np

from graphrelease.errors import OptionError

_TAG = b"graphrelease-input-binding/1\n"
MIN_KEY_BYTES = 16


def canonical_message(graph_or_collection) -> bytes:
    """The bytes that are authenticated (see module docstring)."""
    from graphrelease.graph import Graph, GraphCollection

    if isinstance(graph_or_collection, Graph):
        graphs = [graph_or_collection]
        parts = [_TAG, b"graph\n"]
    elif isinstance(graph_or_collection, GraphCollection):
        graphs = list(graph_or_collection)
        parts = [_TAG, f"collection {len(graphs)}\n".encode()]
    else:
        raise OptionError(f"input binding needs a Graph or GraphCollection, got {type(graph_or_collection).__name__}")
    for g in graphs:
        edges = np.ascontiguousarray(np.asarray(g.edges, dtype="<i8").reshape(-1, 2))
        parts.append(f"n={int(g.num_nodes)} m={edges.shape[0]}\n".encode())
        parts.append(edges.tobytes())
    return b"".join(parts)


def input_hmac(graph_or_collection, key: bytes) -> str:
    """Hex HMAC-SHA256 of the canonical input under ``key`` (at least 16 bytes)."""
    if not isinstance(key, (bytes, bytearray)) or len(key) < MIN_KEY_BYTES:
        raise OptionError(f"the input-binding key must be at least {MIN_KEY_BYTES} bytes")
    return hmac.new(bytes(key), canonical_message(graph_or_collection), hashlib.sha256).hexdigest()


def verify_hmac(graph_or_collection, key: bytes, expected: str) -> bool:
    """Constant-time comparison of the recomputed HMAC with ``expected``."""
    return hmac.compare_digest(input_hmac(graph_or_collection, key), str(expected))


def generate_key() -> bytes:
    """A fresh 32-byte key from the OS CSPRNG."""
    return os.urandom(32)


def write_key(path: str | Path, key: bytes | None = None) -> bytes:
    """Write ``key`` (default: a fresh one) as hex text, mode 0600. Returns the key."""
    key = generate_key() if key is None else key
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.hex().encode() + b"\n")
    return key


def load_key(path: str | Path) -> bytes:
    """Read a key file: hex text (as written by :func:`write_key` and ``graphrelease synth``) or raw bytes."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise OptionError(f"--key {path}: cannot read the key file ({err.strerror or err})") from err
    text = raw.strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = raw
    if len(key) < MIN_KEY_BYTES:
        raise OptionError(f"--key {path}: key shorter than {MIN_KEY_BYTES} bytes")
    return key

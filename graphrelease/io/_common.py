"""File handling shared by the readers: opening (gzip-aware), binary detection, id remapping, error wording.

Readers are split in two layers: ``parse_*`` functions work on bytes / arrays already in memory (so they are testable
on strings) and ``read_*`` functions open files and call them. Every user-caused problem becomes an
:class:`~graphrelease.errors.InputFormatError` or :class:`~graphrelease.errors.GraphValidationError` whose message
names the file (``source``) and, where there is one, the line.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphrelease.errors import InputFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
# Bytes that never occur in a text edge list: NUL and the C0 controls other than tab / LF / CR / form feed.
_BINARY_BYTES = bytes(range(0, 9)) + bytes(range(14, 32))


@dataclass
class ParsedNodes:
    """Result of mapping raw node identifiers to ``0..n-1``.

    ``node_ids`` is ``None`` when the identifiers already were ``0..n-1`` (all present); otherwise it holds the
    original identifier of every node in node order.
    """

    index: np.ndarray
    num_nodes: int
    node_ids: np.ndarray | None
    notes: list[str] = field(default_factory=list)


def read_bytes(path: Path) -> bytes:
    """The file's content, transparently gunzipped. Missing files and truncated gzip streams become clean errors."""
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    if path.is_dir():
        raise InputFormatError(f"{path}: is a directory, expected a file")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputFormatError(f"{path}: cannot read ({err.strerror or err})") from err
    if raw[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as err:
            raise InputFormatError(
                f"{path}: gzip stream is truncated or corrupt ({err}); re-download or re-compress the file"
            ) from err
    return raw


def ensure_text(data: bytes, source: str) -> bytes:
    """Reject binary content early, with a message that says so (instead of a confusing parse error later)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = data[:65536]
    if head.translate(None, _BINARY_BYTES) != head:
        raise InputFormatError(f"{source}: looks like binary data, not a text edge list (use --format to choose a reader)")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut at the 64 KiB boundary is fine; anything earlier is not UTF-8 text.
        if err.start < len(head) - 4:
            raise InputFormatError(f"{source}: is not UTF-8 text (byte {err.start}); convert it to UTF-8") from err
    return data


def remap_integer_ids(ids: np.ndarray, *, declared_nodes: int | None = None) -> ParsedNodes:
    """Map non-negative int64 identifiers to ``0..n-1``.

    If every id in ``0..max`` occurs (or the file declared its node count), ids are kept as they are; otherwise
    the sorted distinct ids are renumbered and kept in ``node_ids``.
    """
    flat = ids.ravel()
    if declared_nodes is not None:
        return ParsedNodes(ids, int(declared_nodes), None)
    if flat.size == 0:
        return ParsedNodes(ids, 0, None)
    top = int(flat.max())
    # Presence check by bincount only when it is cheap; more distinct ids than occurrences is impossible.
    if top + 1 <= max(4 * flat.size, 1024) and np.all(np.bincount(flat, minlength=top + 1) > 0):
        return ParsedNodes(ids, top + 1, None)
    uniq, inverse = np.unique(flat, return_inverse=True)
    note = f"node ids renumbered 0..{uniq.size - 1} (original ids kept as node_ids; range {int(uniq[0])}..{top})"
    return ParsedNodes(inverse.reshape(ids.shape).astype(np.int64), int(uniq.size), uniq, [note])


def remap_string_ids(ids: np.ndarray, source: str) -> ParsedNodes:
    """Map byte-string identifiers to ``0..n-1`` in sorted order; original ids kept as ``str``."""
    uniq, inverse = np.unique(ids.ravel(), return_inverse=True)
    try:
        names = np.char.decode(uniq, "utf-8") if uniq.dtype.kind == "S" else uniq.astype(str)
    except UnicodeDecodeError as err:
        raise InputFormatError(f"{source}: node id is not valid UTF-8 ({err})") from err
    note = f"string node ids mapped to 0..{uniq.size - 1} (sorted; original ids kept as node_ids)"
    return ParsedNodes(inverse.reshape(ids.shape).astype(np.int64), int(uniq.size), names, [note])


def with_source(err: Exception, source: str) -> str:
    """``str(err)`` prefixed by the source unless it already names it."""
    text = str(err)
    return text if source in text else f"{source}: {text}"

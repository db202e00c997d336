"""Format detection: file extension first, content (magic bytes, XML root, GML keyword) when the extension is unknown."""

from __future__ import annotations

import gzip
import re
import zipfile
import zlib
from pathlib import Path

from graphrelease.errors import InputFormatError
from graphrelease.io._common import GZIP_MAGIC, ZIP_MAGIC

FORMATS = ("edgelist", "csv", "tsv", "npz", "graphml", "gml", "gexf", "mtx", "pt", "tu", "graphdir")
"""Names accepted by ``fmt=`` / ``--format``. ``csv`` and ``tsv`` are edge lists with a fixed delimiter; ``tu`` and
``graphdir`` (one ``graph_<number>.<ext>`` file per graph) are collection directories."""

_BY_EXTENSION = {
    ".npz": "npz",
    ".graphml": "graphml",
    ".gml": "gml",
    ".gexf": "gexf",
    ".mtx": "mtx",
    ".pt": "pt",
    ".pth": "pt",
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "edgelist",
    ".edges": "edgelist",
    ".edgelist": "edgelist",
    ".el": "edgelist",
    ".dat": "edgelist",
}
_GML_RE = re.compile(rb"(?m)^\s*graph\s*\[")
#: MatrixMarket's banner: a file that starts with it is a matrix whatever its extension (Network Repository ships
#: ``.edges`` files with it, whose size line would otherwise read as an edge). Matched ignoring case, a UTF-8 BOM and
#: leading whitespace, which the reader normalises before scipy (whose parser wants the exact banner) sees the file.
MTX_BANNER = b"%%matrixmarket"


def starts_with_mtx_banner(head: bytes) -> bool:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:len(MTX_BANNER)].lower() == MTX_BANNER


def _zip_kind(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return None
    if any(n.endswith("data.pkl") for n in names):
        return "pt"
    if names and all(n.endswith(".npy") for n in names):
        return "npz"
    return None


def _content_format(head: bytes, path: Path) -> str | None:
    if head.startswith(ZIP_MAGIC):
        return _zip_kind(path)
    stripped = head.lstrip()
    if stripped.startswith(b"<"):
        lowered = stripped[:2048].lower()
        if b"<gexf" in lowered:
            return "gexf"
        if b"<graphml" in lowered:
            return "graphml"
        return None
    if _GML_RE.search(head[:4096]):
        return "gml"
    if starts_with_mtx_banner(head):
        return "mtx"
    return None


def _gzip_text_kind(path: Path) -> str | None:
    """``"mtx"`` for a gzipped text file that starts with the MatrixMarket banner (else ``None``)."""
    try:
        with gzip.open(path, "rb") as handle:
            head = handle.read(64)
    except (EOFError, OSError, zlib.error):
        return None  # the edge-list reader reports the broken stream
    return "mtx" if starts_with_mtx_banner(head) else None


def sniff_format(path: str | Path) -> str:
    """Guess the reader for ``path`` (one of :data:`FORMATS`); raise a clean error if it cannot be guessed.

    Example
    -------
    >>> sniff_format("/nonexistent.csv")
    Traceback (most recent call last):
    ...
    graphrelease.errors.InputFormatError: /nonexistent.csv: no such file
    """
    path = Path(path)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    if path.is_dir():
        from graphrelease.io.tudataset import find_tu_name

        from graphrelease.io.graphdir import graph_files

        if find_tu_name(path) is not None:
            return "tu"
        if graph_files(path):
            return "graphdir"
        half = sorted(p.name for p in path.glob("*_A.txt"))
        if len(half) == 1:  # a TU collection with a file missing: name the file
            base = half[0][: -len("_A.txt")]
            missing = [f"{base}_{part}.txt" for part in ("graph_indicator",) if not (path / f"{base}_{part}.txt").exists()]
            if missing:
                raise InputFormatError(f"{path}: TU Dortmund collection '{base}' lacks {', '.join(missing)} (found "
                                       f"{half[0]}); every TU collection needs NAME_A.txt and NAME_graph_indicator.txt")
        raise InputFormatError(
            f"{path}: is a directory without a TU Dortmund collection (expected one NAME_A.txt with "
            f"NAME_graph_indicator.txt) or graph_<number>.<ext> files; pass a graph file instead"
        )
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-2:] == [".mtx", ".bz2"]:  # scipy reads bzip2 too; only MatrixMarket files come that way here
        return "mtx"
    if suffixes and suffixes[-1] == ".gz":
        inner = suffixes[-2] if len(suffixes) > 1 else ""
        if inner in _BY_EXTENSION and _BY_EXTENSION[inner] in ("graphml", "gml", "gexf", "mtx"):
            return _BY_EXTENSION[inner]
        if inner in _BY_EXTENSION and _BY_EXTENSION[inner] in ("csv", "tsv", "edgelist"):
            return _gzip_text_kind(path) or _BY_EXTENSION[inner]
    try:
        with open(path, "rb") as handle:
            head = handle.read(8192)
    except OSError as err:
        raise InputFormatError(f"{path}: cannot read ({err.strerror or err})") from err
    if suffixes and suffixes[-1] in _BY_EXTENSION:
        by_name = _BY_EXTENSION[suffixes[-1]]
        # A text extension on a binary container (an .npz saved as .txt) is decided by content below.
        if by_name in ("csv", "tsv", "edgelist") and (
                starts_with_mtx_banner(head) or (head.startswith(GZIP_MAGIC) and _gzip_text_kind(path))):
            return "mtx"
        if by_name not in ("csv", "tsv", "edgelist") or not head.startswith((ZIP_MAGIC, b"\x93NUMPY", b"\x80")):
            return by_name
    if head.startswith(GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as handle:
                head = handle.read(8192)
        except (EOFError, OSError, zlib.error) as err:
            raise InputFormatError(f"{path}: gzip stream is truncated or corrupt ({err})") from err
        found = _content_format(head, path) if not head.startswith(ZIP_MAGIC) else None
        return found or "edgelist"
    if head.startswith(b"\x93NUMPY"):
        raise InputFormatError(
            f"{path}: is a single .npy array, not a graph; save an .npz (gnn-benchmark keys) or an edge list"
        )
    if head[:1] == b"\x80":
        raise InputFormatError(f"{path}: is a Python pickle; refusing to unpickle. Save the graph as .npz or a .pt of tensors")
    found = _content_format(head, path)
    if found:
        return found
    if head.startswith(ZIP_MAGIC):
        raise InputFormatError(f"{path}: is a zip archive that is neither an .npz of arrays nor a PyTorch file")
    # Text without a recognised structure: read it as an edge list (its reader rejects binary content clearly).
    return "edgelist"

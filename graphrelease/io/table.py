"""Fast, line-aware parsing of delimited text tables (edge lists, TU files, feature and label files).

The fast path is vectorised: split lines, drop comments and blank lines, split rows, convert all tokens with one
numpy call. Only when something is wrong do we walk the lines again to find the first offending one, so errors
still name the line.

Example
-------
>>> t = split_table(b"# comment\\n1,2\\n3,4\\n", source="<string>")
>>> t.rows, t.delimiter
([[b'1', b'2'], [b'3', b'4']], b',')
"""

from __future__ import annotations

import csv
import gc
import io
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from graphrelease.errors import InputFormatError

_INT_RE = re.compile(rb"^[+-]?\d+$")
_COMMENT_START = (ord("#"), ord("%"))


@dataclass
class Table:
    """Rows of byte tokens plus the bookkeeping needed to name lines in errors."""

    rows: list[list[bytes]]
    delimiter: bytes | None
    source: str
    lines: list[bytes]
    comments: list[bytes] = field(default_factory=list)
    header: list[bytes] | None = None
    header_skipped: bool = False

    @property
    def num_columns(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    def line_of_row(self, row_index: int) -> int:
        """1-based line number of data row ``row_index`` (walks the lines: error path only)."""
        seen = -1 - int(self.header_skipped)
        for number, line in enumerate(self.lines, start=1):
            stripped = line.strip()
            if not stripped or stripped[0] in _COMMENT_START:
                continue
            seen += 1
            if seen == row_index:
                return number
        return len(self.lines)


@contextmanager
def _no_gc():
    """Splitting a million lines allocates a million small lists; the cyclic GC would rescan them repeatedly."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class NumericBlock:
    """Fast-path result: the first data line's tokens (maybe a header) and the numbers of all later lines."""

    first_row: list[bytes]
    values: np.ndarray
    comments: list[bytes]
    delimiter: bytes | None


_DIGITS = b"0123456789"


def fast_numeric(data: bytes, *, delimiter: bytes | str | None = None, dtype=np.int64) -> NumericBlock | None:
    """Vectorised parse of a purely numeric table (after leading comments and one optional header line).

    Returns ``None`` whenever anything is irregular (comments or text in the body, ragged rows, empty fields,
    possible overflow): the caller then takes the line-by-line path, which names the offending line.
    """
    if isinstance(delimiter, str):
        delimiter = delimiter.encode()
    if delimiter in (b" ", b""):
        delimiter = None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    comments: list[bytes] = []
    pos = 0
    first = None
    for _ in range(100_000):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = data[pos:end].strip()
        if line and line[0] not in _COMMENT_START:
            first = line
            break
        if line:
            comments.append(line)
        if end >= len(data):
            return None
        pos = end + 1
    if first is None:
        return None
    rest = data[end + 1 :]
    if delimiter is None:
        delimiter = _sniff_delimiter(first)
    allowed = _DIGITS + b" \t\n+-" + (delimiter or b"") + (b".eE" if dtype != np.int64 else b"")
    if rest.translate(None, allowed):
        return None
    if delimiter is not None and delimiter not in (b"\t",):
        if b'"' in first:
            return None
        squeezed = rest.replace(b" ", b"").replace(b"\t", b"")
        if delimiter + delimiter in squeezed or squeezed.startswith(delimiter) or (b"\n" + delimiter) in squeezed or (
            delimiter + b"\n"
        ) in squeezed or squeezed.endswith(delimiter):
            return None
        rest = rest.replace(delimiter, b" ")
        first_row = [tok.strip() for tok in first.split(delimiter)]
    else:
        first_row = first.split()
    buf = np.frombuffer(rest, dtype=np.uint8)
    is_tok = (buf != 32) & (buf != 9) & (buf != 10)
    starts = np.flatnonzero(is_tok & ~np.concatenate([[False], is_tok[:-1]]))
    if starts.size == 0:
        return NumericBlock(first_row, np.zeros((0, len(first_row)), dtype=dtype), comments, delimiter)
    ends = np.flatnonzero(is_tok & ~np.concatenate([is_tok[1:], [False]]))
    if dtype == np.int64 and int((ends - starts).max()) >= 18:
        return None  # could overflow int64; the slow path checks exactly
    newlines = np.flatnonzero(buf == 10)
    per_line = np.bincount(np.searchsorted(newlines, starts), minlength=newlines.size + 1)
    per_line = per_line[per_line > 0]
    ncols = int(per_line[0])
    if np.any(per_line != ncols) or (ncols != len(first_row) and all(_is_number(t) for t in first_row)):
        return None
    values = np.fromstring(rest, dtype=dtype, sep=" ")
    if values.size != starts.size:
        return None
    return NumericBlock(first_row, values.reshape(-1, ncols), comments, delimiter)


def _is_number(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def is_int_token(token: bytes) -> bool:
    return bool(_INT_RE.match(token.strip()))


def _sniff_delimiter(first: bytes) -> bytes | None:
    if b"," in first:
        return b","
    if b";" in first and b" " not in first.strip() and b"\t" not in first:
        return b";"
    if b"\t" in first:
        return b"\t"
    if b"|" in first and b" " not in first.strip():  # pipe-separated exports (databases, some SNAP mirrors)
        return b"|"
    return None


def split_table(
    data: bytes,
    *,
    source: str,
    delimiter: bytes | str | None = None,
) -> Table:
    """Split text into rows of tokens. ``delimiter=None`` sniffs ``,`` / ``;`` / tab, else splits on whitespace."""
    if isinstance(delimiter, str):
        delimiter = delimiter.encode()
    if delimiter in (b" ", b""):
        delimiter = None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = data.split(b"\n")
    comments: list[bytes] = []
    body: list[bytes] = []
    for line in lines:
        if not line:
            continue
        first = line[0]
        if first in _COMMENT_START:
            comments.append(line)
            continue
        if first in (32, 9):  # leading whitespace: strip before judging comment / blank
            line = line.strip()
            if not line:
                continue
            if line[0] in _COMMENT_START:
                comments.append(line)
                continue
        body.append(line)
    if not body:
        return Table([], delimiter, source, lines, comments)
    if delimiter is None:
        delimiter = _sniff_delimiter(body[0])
    if delimiter is None:
        with _no_gc():
            rows = [line.split() for line in body]
    elif b'"' in data:
        # Quoted CSV fields: the csv module understands quoting; slower but rare.
        reader = csv.reader(io.StringIO(b"\n".join(body).decode("utf-8", "replace")), delimiter=delimiter.decode())
        rows = [[tok.strip().encode() for tok in row] for row in reader]
    else:
        with _no_gc():
            rows = [line.split(delimiter) for line in body]
            if b" " in body[0] or b" " in body[-1] or b"\t" in body[0]:
                rows = [[tok.strip() for tok in row] for row in rows]
    return Table(rows, delimiter, source, lines, comments)


def check_rectangular(table: Table, *, min_columns: int, what: str) -> int:
    """Raise naming the first line whose column count differs from the first row's; return the column count."""
    if not table.rows:
        raise InputFormatError(f"{table.source}: contains no data rows (only comments or blank lines)")
    ncols = len(table.rows[0])
    lengths = set(map(len, table.rows))
    if len(lengths) > 1:
        bad = next(i for i, row in enumerate(table.rows) if len(row) != ncols)
        raise InputFormatError(
            f"{table.source}, line {table.line_of_row(bad)}: ragged row with {len(table.rows[bad])} column(s), "
            f"expected {ncols} like the first row"
        )
    if ncols < min_columns:
        first = table.rows[0][0] if table.rows[0] else b""
        odd = sorted({chr(c) for c in first if not chr(c).isalnum() and chr(c) not in "-_.+\"'"})
        hint = (f"; the line holds {', '.join(repr(c) for c in odd)}: separate columns with a comma, semicolon, tab, "
                "pipe or whitespace" if odd else "")
        raise InputFormatError(
            f"{table.source}, line {table.line_of_row(0)}: {ncols} column(s), expected at least {min_columns} ({what})"
            f"{hint}"
        )
    if table.delimiter is not None and any(not tok for row in table.rows for tok in row[:min_columns]):
        bad = next(i for i, row in enumerate(table.rows) if any(not tok for tok in row[:min_columns]))
        raise InputFormatError(f"{table.source}, line {table.line_of_row(bad)}: empty field")
    return ncols


def token_array(table: Table, columns: slice | list[int]) -> np.ndarray:
    """``(rows, k)`` array of byte tokens of the chosen columns."""
    if isinstance(columns, slice):
        picked = [row[columns] for row in table.rows]
    else:
        picked = [[row[c] for c in columns] for row in table.rows]
    return np.array(picked, dtype=bytes)


def to_int64(tokens: np.ndarray, table: Table, *, what: str, allow_negative: bool = False) -> np.ndarray:
    """Convert byte tokens to int64, naming the first bad line (non-numeric, overflowing or negative)."""
    try:
        values = tokens.astype(np.int64)
    except (ValueError, OverflowError):
        values = None
    if values is None:
        for i, row in enumerate(tokens):
            for tok in row if tokens.ndim == 2 else (row,):
                if not is_int_token(tok):
                    raise InputFormatError(
                        f"{table.source}, line {table.line_of_row(i)}: {what} {tok.decode('utf-8', 'replace')!r} "
                        f"is not an integer"
                    )
                if abs(int(tok)) >= 2**63:
                    raise InputFormatError(
                        f"{table.source}, line {table.line_of_row(i)}: {what} {tok.decode()} overflows 64-bit integers"
                    )
        raise InputFormatError(f"{table.source}: cannot read {what}s as integers")
    if not allow_negative and values.size and values.min() < 0:
        flat = values.reshape(values.shape[0], -1)
        bad = int(np.argmax((flat < 0).any(axis=1)))
        raise InputFormatError(
            f"{table.source}, line {table.line_of_row(bad)}: negative {what} {int(flat[bad].min())}; ids must be >= 0"
        )
    return values


def to_float64(tokens: np.ndarray, table: Table, *, what: str) -> np.ndarray:
    """Convert byte tokens to float64; non-numeric, NaN and infinite values are errors naming the line."""
    try:
        values = tokens.astype(np.float64)
    except ValueError:
        values = None
    if values is None:
        for i, row in enumerate(tokens):
            for tok in row:
                try:
                    float(tok)
                except ValueError:
                    raise InputFormatError(
                        f"{table.source}, line {table.line_of_row(i)}: {what} {tok.decode('utf-8', 'replace')!r} "
                        f"is not a number"
                    ) from None
        raise InputFormatError(f"{table.source}: cannot read {what}s as numbers")
    finite = np.isfinite(values)
    if not finite.all():
        bad = int(np.argmax(~finite.reshape(values.shape[0], -1).all(axis=1)))
        raise InputFormatError(
            f"{table.source}, line {table.line_of_row(bad)}: {what} is NaN or infinite; features must be finite"
        )
    return values


def numeric_table(
    data: bytes,
    *,
    source: str,
    min_columns: int,
    what: str,
    delimiter: bytes | str | None = None,
    dtype=np.int64,
    allow_negative: bool = False,
) -> np.ndarray:
    """All rows of a header-less numeric table as a ``(rows, columns)`` array; errors name the line."""
    block = fast_numeric(data, delimiter=delimiter, dtype=dtype)
    if block is not None and all(_is_number(t) for t in block.first_row) and len(block.first_row) >= min_columns:
        try:
            first = np.array([float(t) if dtype != np.int64 else int(t) for t in block.first_row], dtype=dtype)
        except (ValueError, OverflowError):
            first = None
        if first is not None and first.size == block.values.shape[1]:
            values = np.concatenate([first[None, :], block.values])
            if (allow_negative or values.size == 0 or values.min() >= 0) and (
                dtype == np.int64 or np.all(np.isfinite(values))
            ):
                return values
    table = split_table(data, source=source, delimiter=delimiter)
    ncols = check_rectangular(table, min_columns=min_columns, what=what)
    tokens = token_array(table, slice(0, ncols))
    if dtype == np.int64:
        return to_int64(tokens, table, what=what, allow_negative=allow_negative)
    return to_float64(tokens, table, what=what)

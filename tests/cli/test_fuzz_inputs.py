"""Malformed inputs through ``graphrelease inspect``: each gives one clean error line naming the file, exit != 0."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from cli.app import app
from cli.common import run_cli


class _Evil:
    def __reduce__(self):
        return (print, ("unpickled!",))


def text(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return make


def npz(name: str, **arrays) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        np.savez(path, **arrays)
        return path

    return make


def _csr_npz(**override):
    base = dict(
        adj_data=np.ones(2, dtype=np.float32),
        adj_indices=np.array([1, 0]),
        adj_indptr=np.array([0, 1, 2]),
        adj_shape=np.array([2, 2]),
    )
    base.update(override)
    return base


def torch_file(name: str, payload_fn) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        import torch

        path = tmp / name
        torch.save(payload_fn(), path)
        return path

    return make


def tu(name: str, files: dict[str, str]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        directory = tmp / name
        directory.mkdir()
        for fname, content in files.items():
            (directory / fname).write_text(content)
        return directory

    return make


def with_side(edge_text: str, side_name: str, side_text: str, option: str) -> Callable[[Path], tuple[Path, list[str]]]:
    def make(tmp: Path):
        edges = tmp / "edges.txt"
        edges.write_text(edge_text)
        side = tmp / side_name
        side.write_text(side_text)
        return side, [str(edges), option, str(side)]

    return make


def _gz_truncated(tmp: Path) -> Path:
    path = tmp / "trunc.txt.gz"
    path.write_bytes(gzip.compress(b"0 1\n1 2\n" * 5000)[:-40])
    return path


def _evil_torch():
    import torch

    return {"edge_index": torch.tensor([[0], [1]]), "payload": _Evil()}


def _torch_no_edges():
    import torch

    return {"x": torch.ones(3, 2)}


def _torch_bad_shape():
    import torch

    return {"edge_index": torch.tensor([0, 1, 2])}


CASES: dict[str, Callable] = {
    "missing file": lambda tmp: tmp / "does_not_exist.txt",
    "empty file": text("empty.txt", ""),
    "only comments": text("comments.txt", "# nothing here\n% nor here\n"),
    "header only": text("header.csv", "source,target\n"),
    "binary garbage": text("garbage.txt", bytes(range(256)) * 8),
    "binary garbage no extension": text("garbage", b"\x7fELF\x02\x01\x01\x00" + bytes(200)),
    "not utf-8": text("latin1.txt", "café bob\n".encode("latin-1")),
    "ragged row": text("ragged.txt", "0 1\n1 2\n2 3 4 5\n"),
    "single column": text("single.txt", "1\n2\n3\n"),
    "non-numeric id in numeric file": text("mixed.txt", "0 1\n1 2\nx 3\n"),
    "negative id": text("neg.txt", "0 1\n-1 2\n"),
    "overflowing id": text("overflow.txt", "0 1\n1 123456789012345678901234567890\n"),
    "float id": text("float.txt", "0 1\n1.5 2\n"),
    "csv empty field": text("emptyfield.csv", "0,1\n,2\n"),
    "id beyond declared node count": text("marker.csv", "# graphrelease edge list: nodes=2 edges=1\n0,5\n"),
    "truncated gzip": _gz_truncated,
    "gzip of binary": text("bin.txt.gz", gzip.compress(bytes(range(256)) * 4)),
    "npz not a zip": text("fake.npz", "this is not a zip archive"),
    "npz bad keys": npz("badkeys.npz", foo=np.arange(3)),
    "npz pickled object array": npz("pickled.npz", edges=np.array([_Evil()], dtype=object)),
    "npz non-square adjacency": npz("nonsquare.npz", **_csr_npz(adj_shape=np.array([2, 3]))),
    "npz inconsistent csr": npz("badcsr.npz", **_csr_npz(adj_indptr=np.array([0, 5, 2]))),
    "npz nan features": npz("nanfeat.npz", **_csr_npz(), features=np.array([[np.nan], [1.0]])),
    "npz labels wrong length": npz("labels.npz", **_csr_npz(), labels=np.array([0, 1, 2])),
    "npz empty graph": npz("emptygraph.npz", edges=np.zeros((0, 2), dtype=np.int64), num_nodes=np.array(0)),
    "single npy array": lambda tmp: (np.save(tmp / "arr.npy", np.arange(4)), tmp / "arr.npy")[1],
    "python pickle": text("graph.pkl", pickle.dumps(_Evil())),
    "pt with arbitrary object": torch_file("evil.pt", _evil_torch),
    "pt garbage": text("garbage.pt", b"\x00\x01not torch at all"),
    "pt without edge_index": torch_file("noedges.pt", _torch_no_edges),
    "pt edge_index wrong shape": torch_file("badshape.pt", _torch_bad_shape),
    "graphml malformed xml": text("broken.graphml", "<?xml version='1.0'?><graphml><graph><node id='a'></graph>"),
    "gml malformed": text("broken.gml", "graph [ node [ id 0 ] node [ id 0 ] edge [ source 0 ] "),
    "gexf malformed": text("broken.gexf", "<?xml version='1.0'?><gexf><graph><nodes><node/></graph>"),
    "directory without TU files": lambda tmp: (tmp / "emptydir").mkdir() or tmp / "emptydir",
    "TU empty graph": tu("EMPTYG", {"EMPTYG_A.txt": "1, 2\n2, 1\n", "EMPTYG_graph_indicator.txt": "1\n1\n3\n"}),
    "TU edge across graphs": tu("CROSS", {"CROSS_A.txt": "1, 3\n", "CROSS_graph_indicator.txt": "1\n1\n2\n"}),
    "TU zero node id": tu("ZERO", {"ZERO_A.txt": "0, 1\n", "ZERO_graph_indicator.txt": "1\n1\n"}),
    "TU nan attributes": tu(
        "NANATTR",
        {"NANATTR_A.txt": "1, 2\n", "NANATTR_graph_indicator.txt": "1\n1\n", "NANATTR_node_attributes.txt": "1.0\nnan\n"},
    ),
    "TU graph labels count": tu(
        "GL", {"GL_A.txt": "1, 2\n", "GL_graph_indicator.txt": "1\n1\n", "GL_graph_labels.txt": "0\n1\n"}
    ),
    "features with unknown id": with_side("0 1\n1 2\n", "feat.csv", "0,1\n1,1\n7,1\n", "--features"),
    "features with nan": with_side("0 1\n1 2\n", "featnan.csv", "0,1\n1,nan\n2,1\n", "--features"),
    "features missing a node": with_side("0 1\n1 2\n", "featmiss.csv", "0,1\n1,1\n", "--features"),
    "labels with duplicate id": with_side("0 1\n1 2\n", "lab.csv", "0,1\n0,2\n", "--labels"),
    "labels below -1": with_side("0 1\n1 2\n", "labneg.csv", "0,1\n1,-5\n", "--labels"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_input_gives_one_clean_error(case, tmp_path, capsys):
    made = CASES[case](tmp_path)
    if isinstance(made, tuple):
        named, args = made
    else:
        named, args = made, [str(made)]
    code = run_cli(app, ["inspect", *args])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code != 0, f"{case}: exit code 0, stdout={captured.out[:200]!r}"
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert err.startswith("error:"), err
    assert len(err.splitlines()) == 1, f"{case}: more than one line: {err!r}"
    assert named.name in err, f"{case}: error does not name the file: {err!r}"
    assert "unpickled!" not in captured.out


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_unknown_format_option(tmp_path, capsys):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n")
    code = run_cli(app, ["inspect", str(path), "--format", "parquet"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "parquet" in err

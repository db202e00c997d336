"""Malformed, hostile and extreme inputs and option values through every command: each gives a one-line error (exit
2-5) or a valid release, never a traceback, and never leaves a stray release directory or key behind."""

from __future__ import annotations

import gzip
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cli.app import app
from cli.common import run_cli

HEAD = '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="undirected">'


class _Evil:
    def __reduce__(self):  # would run a command if anything ever unpickled it
        return (print, ("UNPICKLED",))


def _files(root: Path) -> dict[str, Path]:
    """Every bad input file, plus one good graph (``good``) and one good release (made by the test)."""
    from graphrelease.io import load_default_graph, write_graph

    f: dict[str, Path] = {}

    def text(name: str, content: str | bytes) -> Path:
        path = root / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        f[name] = path
        return path

    write_graph(load_default_graph().induced_subgraph(np.arange(120)), root / "good.csv")
    f["good"] = root / "good.csv"
    text("empty.csv", "")
    text("comments.csv", "# nothing here\n% nor here\n")
    text("header_only.csv", "source,target\n")
    text("binary.csv", bytes(range(256)) * 4)
    text("latin1.csv", "caf\xe9,b\n".encode("latin-1") * 3)
    text("pipes.csv", "1|2\n2|3\n3|4\n")
    text("one_column.csv", "1\n2\n3\n")
    text("negative.csv", "0,1\n-4,2\n")
    text("overflow.csv", "0,1\n1,99999999999999999999999999\n")
    text("nan.csv", "0,1\nnan,2\n")
    text("ragged.csv", "0,1\n1,2,3,4\n2\n")
    text("mixed.csv", "0,1\n1,abc\n")
    text("truncated.csv.gz", gzip.compress(b"0,1\n1,2\n" * 100)[:40])
    zpath = root / "zipped.csv"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("g.csv", "0,1\n")
    f["zipped.csv"] = zpath
    text("bomb.graphml", '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;'
         '&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;'
         '&lol2;">]><graphml><graph><node id="&lol3;"/></graph></graphml>')
    text("broken.graphml", HEAD + '<node id="a"/><edge source="a"')
    text("no_nodes.graphml", HEAD + '<edge source="a" target="b"/></graph></graphml>')
    text("evil.pt", pickle.dumps({"edge_index": _Evil()}))
    np.save(root / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    f["objects.npy"] = root / "objects.npy"
    np.savez(root / "nokeys.npz", foo=np.arange(3))
    f["nokeys.npz"] = root / "nokeys.npz"
    np.savez(root / "nonsquare.npz", adj_data=np.ones(1), adj_indices=np.array([0]), adj_indptr=np.array([0, 1, 1]),
             adj_shape=np.array([2, 3]))
    f["nonsquare.npz"] = root / "nonsquare.npz"
    np.savez(root / "objarr.npz", edges=np.array([[0, 1]], dtype=object))
    f["objarr.npz"] = root / "objarr.npz"
    tu = root / "TU"
    tu.mkdir()
    (tu / "TU_A.txt").write_text("1, 2\n")
    f["tu_missing"] = tu
    tu2 = root / "TU2"
    tu2.mkdir()
    (tu2 / "TU2_A.txt").write_text("1, 3\n")
    (tu2 / "TU2_graph_indicator.txt").write_text("1\n1\n2\n")
    f["tu_cross"] = tu2
    text("feat_nan.csv", "0,1.0\n1,nan\n")
    text("labels_unknown.csv", "0,1\n100000,2\n")
    text("nodes_dup.txt", "0\n1\n1\n")
    text("nodes_short.txt", "0\n1\n")
    text("plan_bad.toml", "name = 1\n[[inputs]]\n")
    text("plan_syntax.toml", "name = [\n")
    text("pairs_bad.csv", "u,v\nx,y\n")
    text("a_file", "not a directory")
    return f


def _cases(f: dict[str, Path], tmp: Path) -> list[tuple[str, list[str]]]:
    good, out = str(f["good"]), str(tmp / "out")
    synth = ["synth", "--epsilon", "1", "--out", out]
    cases = [(f"synth {name}", ["synth", str(f[name]), "--epsilon", "1", "--out", out, "--node-set", "from-edges"])
             for name in ("empty.csv", "comments.csv", "header_only.csv", "binary.csv", "latin1.csv", "pipes.csv",
                          "one_column.csv", "negative.csv", "overflow.csv", "nan.csv", "ragged.csv", "mixed.csv",
                          "truncated.csv.gz", "zipped.csv", "bomb.graphml", "broken.graphml", "evil.pt",
                          "objects.npy", "nokeys.npz", "nonsquare.npz", "objarr.npz", "tu_missing", "tu_cross")]
    cases += [(f"inspect {name}", ["inspect", str(f[name])]) for name in ("binary.csv", "evil.pt", "bomb.graphml",
                                                                         "tu_missing", "pipes.csv")]
    cases += [("inspect missing --json", ["inspect", str(tmp / "nope.csv"), "--json"]),
              ("inspect a directory", ["inspect", str(tmp)])]
    for eps in ("0", "-1", "1e-9", "1e12", "1e300", "inf", "nan", "abc", "-inf"):
        cases.append((f"synth epsilon {eps}", ["synth", good, "--epsilon", eps, "--out", out]))
    for delta in ("0", "1", "-1", "2", "nan", "1e-300"):
        cases.append((f"synth delta {delta}", [*synth[:1], good, *synth[1:], "--delta", delta]))
    cases += [
        ("synth graphs 0", ["synth", good, *synth[1:], "--graphs", "0"]),
        ("synth graphs -3", ["synth", good, *synth[1:], "--graphs", "-3"]),
        ("synth unknown method", ["synth", good, *synth[1:], "--method", "nope"]),
        ("synth unknown mode", ["synth", good, *synth[1:], "--method", "dpgvae", "--mode", "nope"]),
        ("synth unknown adjacency", ["synth", good, *synth[1:], "--adjacency", "hyperedge"]),
        ("synth graph adjacency on one graph", ["synth", good, *synth[1:], "--adjacency", "graph"]),
        ("synth nodes 0", ["synth", good, *synth[1:], "--nodes", "0"]),
        ("synth nodes too few", ["synth", good, *synth[1:], "--nodes", "5"]),
        ("synth nodes missing file", ["synth", good, *synth[1:], "--nodes", str(tmp / "none.txt")]),
        ("synth nodes duplicate", ["synth", good, *synth[1:], "--nodes", str(f["nodes_dup.txt"])]),
        ("synth node-set bogus", ["synth", good, *synth[1:], "--node-set", "maybe"]),
        ("synth out under a file", ["synth", good, "--epsilon", "1", "--out", str(f["a_file"] / "rel")]),
        ("synth key inside release", ["synth", good, *synth[1:], "--key", str(tmp / "out" / "k.key")]),
        ("synth release format bogus", ["synth", good, *synth[1:], "--graph-format", "docx"]),
        ("synth input format bogus", ["synth", good, *synth[1:], "--format", "docx"]),
        ("synth set malformed", ["synth", good, *synth[1:], "--set", "novalue"]),
        ("synth set unknown option", ["synth", good, *synth[1:], "--set", "bogus=1"]),
        ("synth set seed", ["synth", good, *synth[1:], "--set", "seed=1"]),
        ("synth features nan", ["synth", good, *synth[1:], "--features", str(f["feat_nan.csv"])]),
        ("synth labels unknown id", ["synth", good, *synth[1:], "--labels", str(f["labels_unknown.csv"])]),
        ("synth signing key missing", ["synth", good, *synth[1:], "--signing-key", str(tmp / "none.pem")]),
        ("synth signing key not pem", ["synth", good, *synth[1:], "--signing-key", good]),
        ("synth edge list undeclared", ["synth", str(f["pipes.csv"]), "--epsilon", "1", "--out", out]),
        ("train epsilon 0", ["train", good, "--epsilon", "0", "--out", out]),
        ("train epsilon 0.001", ["train", good, "--epsilon", "0.001", "--out", out, "--method", "dp-mlp"]),
        ("train unknown method", ["train", good, "--epsilon", "1", "--out", out, "--method", "nope"]),
        ("train node adjacency no classes", ["train", good, "--epsilon", "1", "--out", out, "--adjacency", "node"]),
        ("train k-neighbor bad", ["train", good, "--epsilon", "1", "--out", out, "--adjacency", "k-neighbor:x"]),
        ("train num_classes bad", ["train", good, "--epsilon", "1", "--out", out, "--set", "num_classes=x"]),
        ("embed unsupported method", ["embed", good, "--epsilon", "1", "--out", out, "--method", "dp-mlp"]),
        ("embed delta 1", ["embed", good, "--epsilon", "1", "--delta", "1", "--out", out]),
        ("predict not a release", ["predict", str(tmp), good]),
        ("sample not a release", ["sample", str(tmp), "--out", out]),
        ("verify not a release", ["certificate", "verify", str(tmp)]),
        ("verify input without key", ["certificate", "verify", str(tmp), "--input", good]),
        ("verify signer key bogus", ["certificate", "verify", str(tmp), "--signer-key", "zz"]),
        ("show not a release", ["certificate", "show", str(tmp)]),
        ("keygen existing", ["certificate", "keygen", good]),
        ("audit missing original", ["audit", "--original", str(tmp / "nope.csv"), "--release", str(tmp)]),
        ("budget nothing", ["budget"]),
        ("budget both", ["budget", "--dataset-size", "100", "--batch-size", "10", "--epochs", "1",
                         "--noise-multiplier", "1", "--epsilon", "1"]),
        ("budget wor add_remove", ["budget", "--dataset-size", "100", "--batch-size", "10", "--epochs", "1",
                                   "--noise-multiplier", "1", "--sampling", "wor", "--neighboring", "add_remove"]),
        ("batch bad plan", ["batch", str(f["plan_bad.toml"])]),
        ("batch syntax error", ["batch", str(f["plan_syntax.toml"])]),
        ("batch missing plan", ["batch", str(tmp / "none.toml")]),
    ]
    return cases


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    return root, _files(root)


def test_at_least_sixty_cases(staged, tmp_path):
    assert len(_cases(staged[1], tmp_path)) >= 60


def test_every_bad_input_is_one_line_and_leaves_nothing(staged, tmp_path, capsys):
    root, files = staged
    failures = []
    for name, args in _cases(files, tmp_path):
        rc = run_cli(app, list(args))
        out = capsys.readouterr()
        text = out.out + out.err
        if "Traceback" in text or "UNPICKLED" in text:
            failures.append(f"{name}: traceback or unpickling\n{text[-800:]}")
            continue
        if rc == 0:  # a valid release is an acceptable answer to an extreme option: check it verifies
            if (tmp_path / "out" / "certificate.json").is_file():
                assert run_cli(app, ["certificate", "verify", str(tmp_path / "out")]) == 0, name
                capsys.readouterr()
        elif rc not in (1, 2, 3, 4, 5):
            failures.append(f"{name}: exit code {rc}")
        else:
            stream = out.out if "--json" in args else out.err  # --json answers errors as JSON on stdout
            lines = [line for line in stream.strip().splitlines() if line.strip()]
            if not (1 <= len(lines) <= 6):  # one message (rich may wrap a long line on a narrow terminal)
                failures.append(f"{name}: expected a one-line error, got {len(lines)} lines:\n{out.err[-800:]}")
            if (tmp_path / "out").exists() or (tmp_path / "out.key").exists():
                failures.append(f"{name}: left a release or key behind after failing")
        for leftover in (tmp_path / "out", tmp_path / "out.key"):
            if leftover.is_dir():
                import shutil

                shutil.rmtree(leftover)
            elif leftover.exists():
                leftover.unlink()
    assert not failures, "\n\n".join(failures)


def test_json_errors_are_json(staged, tmp_path, capsys):
    rc = run_cli(app, ["inspect", str(tmp_path / "nope.csv"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 2 and payload["exit_code"] == 2 and "no such file" in payload["error"]

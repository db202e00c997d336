"""DPGGAN (haonan3/Secure-Network-Release-with-Link-Privacy): run the authors' ``src/main.py`` unchanged under this
machine's torch 2.13 / networkx 3 / scipy 1.14+, with the shims below. No side-by-side row yet (see
``reports/peers.md``, "How each peer was run here"); this is the adapter that makes the peer run at all.

    cp -r PEERS/Secure-Network-Release-with-Link-Privacy /tmp/dpggan && (cd /tmp/dpggan && unzip -q data.zip \
        && mkdir -p log/txt_log data/generated)
    pip install --no-deps --target PEERS/site_dpggan powerlaw
    PYTHONPATH=/tmp/dpggan:PEERS/site_dpggan python benchmarks/peers/dpggan.py /tmp/dpggan \
        --model_name DPGGAN --dataset_str new_IMDB_MULTI --epochs 1 --threads 1

The peer pins torch 1.1.0 (Python <= 3.7 wheels only); the package index here offers torch >= 1.13 for Python 3.11,
so the pinned stack cannot be installed, and there is no conda. What the shims replace (nothing of the peer is
edited or stored here; it writes its logs and ``data/generated/*.pkl`` inside its own copy):

- ``src.GGAN.gcn_layer``: imported by the peer's ``src/GGAN/model.py`` but absent from its repository; aliased to
  its ``src.DPGGAN.gcn_layer`` (the only ``GraphConvolution`` it ships);
- ``torch.nn._functions``: imported (unused) by its ``functional.py``, gone from torch 2: an empty module;
- networkx 2.x names removed in networkx 3: ``to_scipy_sparse_matrix``, ``from_scipy_sparse_matrix``,
  ``from_numpy_matrix``, ``to_numpy_matrix`` mapped to their ``*_array`` successors;
- ``scipy.linalg.eigh(eigvals=...)``: renamed ``subset_by_index`` (scipy 1.14 dropped the old keyword).
"""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path


def install_shims(peer: Path) -> None:
    import networkx as nx
    import numpy as np
    import scipy.linalg as sla
    import scipy.sparse as sps
    import torch.nn

    sys.path.insert(0, str(peer))
    functions = types.ModuleType("torch.nn._functions")
    sys.modules["torch.nn._functions"] = functions
    torch.nn._functions = functions
    nx.to_scipy_sparse_matrix = lambda g, *a, **k: sps.csr_matrix(nx.to_scipy_sparse_array(g, *a, **k))
    nx.from_scipy_sparse_matrix = nx.from_scipy_sparse_array
    nx.from_numpy_matrix = nx.from_numpy_array
    nx.to_numpy_matrix = lambda g, *a, **k: np.asmatrix(nx.to_numpy_array(g, *a, **k))
    eigh = sla.eigh

    def eigh_compat(a, *args, eigvals=None, **kwargs):
        if eigvals is not None:
            kwargs["subset_by_index"] = list(eigvals)
        return eigh(a, *args, **kwargs)

    sla.eigh = eigh_compat
    import src.DPGGAN.gcn_layer as gcn_layer  # the peer's module

    sys.modules["src.GGAN.gcn_layer"] = gcn_layer


def main() -> None:
    peer = Path(sys.argv[1]).resolve()
    install_shims(peer)
    sys.argv = [str(peer / "src" / "main.py"), *sys.argv[2:]]
    runpy.run_path(str(peer / "src" / "main.py"), run_name="__main__")


if __name__ == "__main__":
    main()

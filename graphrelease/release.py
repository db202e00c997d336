"""The release bundle: artifacts + ``certificate.json`` + ``manifest.json``, written atomically.

Everything is written into a hidden temporary directory beside the target (same filesystem), every file is
fsynced, and only then is the directory renamed into place. A run that raises, is interrupted, or is killed
never leaves a half-written release at the target path: at worst a hidden ``.NAME.tmp-*`` directory remains
(removed by the next writer once its owning process is gone). With ``force=True`` an existing release is
replaced only after the new one is complete (an atomic ``renameat2(RENAME_EXCHANGE)`` swap on Linux).

What goes into ``manifest.json``: every artifact's SHA-256 and size, the tool name and version, the UTC creation
time and the manifest format. Nothing derived from the input (no input hash, no seed, no statistics).

Example
-------
>>> import tempfile, json, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> with ReleaseWriter(out) as w:
...     _ = w.path("notes/readme.txt").write_text("synthetic graphs")
...     _ = w.finalize(lambda artifacts: {"artifacts": artifacts, "guarantee": "none"})
>>> sorted(p.name for p in out.iterdir())
['certificate.json', 'manifest.json', 'notes']
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from dataclasses import dataclass, field
from typing import Any, Callable

from graphrelease.errors import ReleaseError
from graphrelease.graph import Graph, GraphCollection, GraphLike

CERTIFICATE = "certificate.json"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "graphrelease-release/1"
SIGNATURE = "manifest.sig"
_RESERVED = {CERTIFICATE, MANIFEST, SIGNATURE}
_OWNER_FILE = ".writer-pid"
_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (streamed)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with Linux ``renameat2(RENAME_EXCHANGE)``; ``False`` where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if result == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP if hasattr(errno, "ENOTSUP") else errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tool_version() -> str:
    try:
        from graphrelease import __version__

        return __version__
    except ImportError:  # an editable install made before graphrelease/__init__.py existed imports it as a namespace
        from importlib.metadata import version

        return version("graphrelease")


def _write_json(path: Path, payload: Any) -> None:
    text = json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


class ReleaseWriter:
    """Context manager that builds a release directory atomically.

    Parameters
    ----------
    out_dir:
        The release directory to create.
    force:
        Replace an existing release at ``out_dir`` (only once the new one is complete).

    Use :meth:`path` (or :meth:`write_graph`, :meth:`write_json`) for every artifact, then call :meth:`finalize`
    with a function that turns ``{relpath: sha256}`` into the certificate. Leaving the block without
    ``finalize`` (or with an exception) discards everything.
    """

    def __init__(self, out_dir: str | Path, *, force: bool = False) -> None:
        self.target = Path(out_dir).absolute()
        self.force = force
        self._tmp: Path | None = None
        self._finalized = False

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "ReleaseWriter":
        target = self.target
        if target.exists() or target.is_symlink():
            if not self.force:
                raise ReleaseError(f"{target} already exists; choose another output directory or pass --force")
            if not target.is_dir():
                raise ReleaseError(f"{target} exists and is not a directory; refusing to replace it")
            if any(target.iterdir()) and not (target / MANIFEST).is_file():
                raise ReleaseError(
                    f"{target} exists and is not a graphrelease release (no {MANIFEST}); refusing to replace it"
                )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ReleaseError(f"cannot create {target.parent}: {err.strerror or err}") from err
        self._clean_stale_temporaries()
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        except OSError as err:
            raise ReleaseError(f"cannot write in {target.parent}: {err.strerror or err}") from err
        # mkdtemp makes the directory private (0700); a release is meant to be shared, so use normal permissions.
        os.chmod(self._tmp, 0o755)
        (self._tmp / _OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._tmp is not None and self._tmp.exists():
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None
        if exc_type is None and not self._finalized:
            raise RuntimeError("ReleaseWriter block ended without finalize(); nothing was released")
        return False

    def _clean_stale_temporaries(self) -> None:
        """Remove temporaries of earlier writers that were killed (their process no longer exists)."""
        for candidate in self.target.parent.glob(f".{self.target.name}.tmp-*"):
            owner = candidate / _OWNER_FILE
            try:
                pid = int(owner.read_text(encoding="ascii").strip())
            except (OSError, ValueError):
                continue
            if not _pid_alive(pid):
                shutil.rmtree(candidate, ignore_errors=True)
        for candidate in self.target.parent.glob(f".{self.target.name}.old-*"):
            if (candidate / _OWNER_FILE).is_file():
                continue
            try:
                pid = int(candidate.name.rsplit("-", 1)[-1])
            except ValueError:
                continue
            if not _pid_alive(pid):
                shutil.rmtree(candidate, ignore_errors=True)

    # ------------------------------------------------------------------ writing artifacts
    @property
    def staging_dir(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("ReleaseWriter is not open (use it as a context manager)")
        return self._tmp

    def path(self, relpath: str) -> Path:
        """Absolute path inside the staging directory for artifact ``relpath`` (parent directories created)."""
        rel = PurePosixPath(relpath)
        if rel.is_absolute() or not rel.parts or ".." in rel.parts or str(rel) in _RESERVED or rel.name == _OWNER_FILE:
            raise ReleaseError(f"invalid artifact path {relpath!r}: use a relative path inside the release")
        full = self.staging_dir.joinpath(*rel.parts)
        full.parent.mkdir(parents=True, exist_ok=True)
        return full

    def write_graph(self, relpath: str, graph: GraphLike, fmt: str = "csv") -> Path:
        """Write a released graph. Original node ids are stripped (releases number nodes ``0..n-1``) and the
        graph is renamed after the artifact, because formats that store a name (GraphML, GML, GEXF, TU file
        prefixes) would otherwise carry the input's file name. Features and labels are written as given: the
        caller decides (and the certificate states) whether they are synthetic or assumed public."""
        from graphrelease.io import write_graph

        name = PurePosixPath(relpath).name.split(".")[0] or "graph"
        if isinstance(graph, GraphCollection):
            graph = GraphCollection(
                tuple(g.replace(node_ids=None, name=f"{name}[{i}]") for i, g in enumerate(graph.graphs)),
                graph.graph_labels,
                name,
            )
        elif isinstance(graph, Graph):
            graph = graph.replace(node_ids=None, name=name)
        return write_graph(graph, self.path(relpath), fmt=fmt)

    def write_json(self, relpath: str, payload: Any) -> Path:
        path = self.path(relpath)
        _write_json(path, payload)
        return path

    def write_bytes(self, relpath: str, content: bytes) -> Path:
        path = self.path(relpath)
        path.write_bytes(content)
        return path

    def artifacts(self) -> dict[str, str]:
        """``{relpath: sha256}`` of every artifact written so far (POSIX relative paths, sorted)."""
        root = self.staging_dir
        found: dict[str, str] = {}
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            if rel in _RESERVED or rel == _OWNER_FILE:
                continue
            found[rel] = sha256_file(path)
        return found

    # ------------------------------------------------------------------ finishing
    def finalize(self, certificate_factory: Callable[[dict[str, str]], dict],
                 signer: Callable[[bytes], str] | None = None) -> Path:
        """Hash the artifacts, write certificate and manifest, fsync, and move the release into place.

        ``signer``: signs the manifest's bytes (hex signature written to ``manifest.sig``; see
        :mod:`graphrelease.privacy.signing`)."""
        root = self.staging_dir
        artifacts = self.artifacts()
        certificate = certificate_factory(dict(artifacts))
        if not isinstance(certificate, dict):
            raise TypeError(f"certificate_factory must return a dict, got {type(certificate).__name__}")
        _write_json(root / CERTIFICATE, certificate)
        entries = {
            rel: {"sha256": sha, "size": (root / rel).stat().st_size} for rel, sha in artifacts.items()
        }
        manifest = {
            "format": MANIFEST_FORMAT,
            "tool": "graphrelease",
            "tool_version": _tool_version(),
            "created": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "artifacts": entries,
            "certificate": {"path": CERTIFICATE, "sha256": sha256_file(root / CERTIFICATE),
                            "size": (root / CERTIFICATE).stat().st_size},
        }
        _write_json(root / MANIFEST, manifest)
        if signer is not None:
            (root / SIGNATURE).write_text(signer((root / MANIFEST).read_bytes()) + "\n", encoding="utf-8")
        (root / _OWNER_FILE).unlink()
        for path in root.rglob("*"):
            if path.is_file():
                _fsync_file(path)
        for directory in sorted({p.parent for p in root.rglob("*")} | {root}, key=lambda p: -len(p.parts)):
            _fsync_dir(directory)
        self._move_into_place(root)
        self._finalized = True
        self._tmp = None
        return self.target

    def _move_into_place(self, staged: Path) -> None:
        target = self.target
        parent = target.parent
        if target.exists():
            if not self.force:  # created by someone else while we were writing
                raise ReleaseError(f"{target} appeared while writing; not overwriting it (pass --force)")
            if _exchange(staged, target):
                # staged now holds the old release; the new one is in place.
                shutil.rmtree(staged, ignore_errors=True)
                _fsync_dir(parent)
                return
            old = parent / f".{target.name}.old-{os.getpid()}"
            os.rename(target, old)
            os.rename(staged, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.rename(staged, target)
            except OSError as err:
                raise ReleaseError(f"cannot move the release into {target}: {err.strerror or err}") from err
        _fsync_dir(parent)


def read_release(release_dir: str | Path) -> dict[str, Any]:
    """Load a release's certificate and manifest: ``{"path", "certificate", "manifest"}``."""
    root = Path(release_dir)
    if not root.is_dir():
        raise ReleaseError(f"{root}: no such release directory")
    loaded: dict[str, Any] = {"path": str(root)}
    for key, name in (("certificate", CERTIFICATE), ("manifest", MANIFEST)):
        path = root / name
        if not path.is_file():
            raise ReleaseError(f"{root}: missing {name}; not a complete graphrelease release")
        try:
            loaded[key] = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ReleaseError(f"{path}: not valid JSON ({err})") from err
    return loaded


def check_manifest(release_dir: str | Path) -> list[str]:
    """Problems found when re-hashing a release against its manifest (empty list: every artifact matches).

    Detects modified, missing and unlisted files, and a certificate that differs from the one recorded.
    """
    root = Path(release_dir)
    release = read_release(root)
    manifest = release["manifest"]
    problems: list[str] = []
    listed = manifest.get("artifacts", {})
    if not isinstance(listed, dict):
        return [f"{MANIFEST}: 'artifacts' is not a mapping"]
    for rel, entry in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: listed in the manifest but missing")
            continue
        if sha256_file(path) != entry.get("sha256"):
            problems.append(f"{rel}: SHA-256 differs from the manifest (file modified)")
        elif path.stat().st_size != entry.get("size"):
            problems.append(f"{rel}: size differs from the manifest")
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    for rel in sorted(present - set(listed) - _RESERVED):
        problems.append(f"{rel}: present but not listed in the manifest")
    cert = manifest.get("certificate", {})
    if (root / CERTIFICATE).is_file() and cert.get("sha256") != sha256_file(root / CERTIFICATE):
        problems.append(f"{CERTIFICATE}: SHA-256 differs from the manifest (certificate modified)")
    return problems


# ------------------------------------------------------------------------------------------------ the binding key
def plan_out_path(out_dir: str | Path, *, force: bool) -> Path:
    """The release directory, checked before any work: an existing one only with ``force``, and never under a
    regular file (it could not be written)."""
    from graphrelease.errors import OptionError

    out = Path(out_dir)
    if out.exists() and not force:
        raise ReleaseError(f"{out} already exists; choose another --out or pass --force to replace it")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OptionError(f"--out {out}: {parent} is a file, not a directory")
            break
    return out


def plan_key_path(out_dir: str | Path, key_path: str | Path | None, *, force: bool) -> Path:
    """Where a release's input-binding key goes (default ``<out>.key`` beside it), checked before any work: never
    inside the release, never over an existing key without ``force`` (it may bind another release), and in a
    directory that exists or can be made (a key that cannot be written would leave a release nobody can bind)."""
    from graphrelease.errors import OptionError

    out = Path(out_dir)
    key_file = Path(key_path) if key_path is not None else out.parent / f"{out.name}.key"
    if key_file.resolve().is_relative_to(out.resolve()):
        raise OptionError(f"--key {key_file} lies inside the release {out}; the key must stay outside it")
    if key_file.exists() and not force:
        raise ReleaseError(f"{key_file} already exists (the key of another release?); choose another --key or pass "
                           "--force to replace it")
    if key_file.is_dir():
        raise OptionError(f"--key {key_file} is a directory; give a file path")
    for parent in key_file.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OptionError(f"--key {key_file}: {parent} is a file, not a directory")
            if not os.access(parent, os.W_OK):
                raise OptionError(f"--key {key_file}: {parent} is not writable")
            break
    return key_file


# ------------------------------------------------------------------------------------------- the released method
#: Where ``synth`` records which generator made a release, its mode and its options.
GENERATOR_FILE = "model/generator.json"
#: Where ``train`` / ``embed`` record a model's method and hyper-parameters.
MODEL_CONFIG = "model/config.json"


@dataclass(frozen=True)
class ReleasedMethod:
    """The method a release was made with and every option it was made with (none of them private: options are the
    owner's choices, the seed is never released). ``build()`` gives a fresh, unfitted instance of that exact
    configuration: what ``sample``, ``predict`` and the canary audit re-fit."""

    name: str
    kind: str  # "generator" or "model"
    options: dict[str, Any] = field(default_factory=dict)
    mode: str | None = None

    def build(self) -> Any:
        if self.kind == "generator":
            from graphrelease.generators import GENERATORS

            cls = GENERATORS.get(self.name)
            kwargs = dict(self.options)
            if self.mode is not None:
                kwargs["mode"] = self.mode
            return cls(**kwargs)
        from graphrelease.models import MODELS

        return MODELS.get(self.name)(**self.options)


def load_method(release_dir: str | Path) -> ReleasedMethod:
    """The method and released options of a release written by ``synth``, ``train`` or ``embed``."""
    root = Path(release_dir)
    if (root / GENERATOR_FILE).is_file():
        ref = _read_json(root / GENERATOR_FILE)
        return ReleasedMethod(str(ref.get("method")), "generator", dict(ref.get("options") or {}), ref.get("mode"))
    if (root / MODEL_CONFIG).is_file():
        config = _read_json(root / MODEL_CONFIG)
        name = str(config.get("method"))
        from dataclasses import fields, is_dataclass

        from graphrelease.models import MODELS

        if name not in MODELS:
            raise ReleaseError(f"{root / MODEL_CONFIG}: unknown method {name!r}")
        probe = MODELS.get(name)()
        names = {f.name for f in fields(probe.config)} if is_dataclass(getattr(probe, "config", None)) else set()
        options = {k: v for k, v in config.items() if k in names and k != "seed"}
        return ReleasedMethod(name, "model", options)
    raise ReleaseError(f"{root}: neither {GENERATOR_FILE} nor {MODEL_CONFIG}; not a release of graphrelease")


def load_fitted(release_dir: str | Path) -> tuple[dict[str, Any], Any]:
    """``(generator.json, the fitted generator)`` of a ``synth`` release: sampling it is post-processing."""
    import importlib

    root = Path(release_dir)
    ref_path = root / GENERATOR_FILE
    try:
        ref = json.loads(ref_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ReleaseError(f"{root}: no readable {GENERATOR_FILE}; was it written by `graphrelease synth`?") from err
    module_name, _, qualname = str(ref.get("fitted_class", "")).partition(":")
    if not module_name.startswith("graphrelease.generators."):
        raise ReleaseError(f"{ref_path}: fitted_class {ref.get('fitted_class')!r} is not a graphrelease generator")
    import graphrelease.generators  # noqa: F401  (registers everything)

    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ReleaseError(f"{ref_path}: unknown fitted class {ref.get('fitted_class')!r}")
    return ref, obj.load(root / "model")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ReleaseError(f"{path}: not readable JSON ({err})") from err
    if not isinstance(data, dict):
        raise ReleaseError(f"{path}: expected a JSON object")
    return data

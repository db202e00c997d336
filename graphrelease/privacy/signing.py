"""Owner signatures over a release: Ed25519 over ``manifest.json`` (which hashes the certificate and every artifact).

``certificate verify`` recomputes everything a certificate states, but someone who edits a certificate and
recomputes the manifest produces a release that is consistent with itself. A signature by the data owner's key
lets a third party check who issued a release: the certificate names the signer's public key (so a reader can see
that it is signed and by which key), ``manifest.sig`` holds the signature, and a verifier who knows the owner's
public key (``certificate verify --signer-key owner.pub``) rejects any release not signed by it, including one
re-signed by a forger with another key or stripped of its signature.

Keys: ``generate_keypair(path)`` writes the private key as PKCS#8 PEM (mode 0600) and the public key as
``<path>.pub`` (one line of hex, the raw 32-byte Ed25519 key). The library is ``cryptography`` (maintained, and
the reference Python binding to OpenSSL's Ed25519); nothing here is hand-written cryptography.

Example
-------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> priv, pub = generate_keypair(d / "owner.key")
>>> sig = sign_bytes(load_private_key(priv), b"manifest")
>>> verify_bytes(load_public_key(pub), b"manifest", sig)
True
"""

from __future__ import annotations

import os
from pathlib import Path

from graphrelease.errors import OptionError

SIGNATURE_FILE = "manifest.sig"
ALGORITHM = "Ed25519"


def generate_keypair(path: str | Path) -> tuple[Path, Path]:
    """Write a fresh Ed25519 private key (PEM, 0600) at ``path`` and its public key at ``<path>.pub``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = Path(path)
    if path.exists():
        raise OptionError(f"{path} already exists; refusing to overwrite a signing key")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    pub_path = path.with_name(path.name + ".pub")
    pub_path.write_text(public_key_hex(key.public_key()) + "\n", encoding="utf-8")
    return path, pub_path


def load_private_key(path: str | Path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = Path(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as err:
        raise OptionError(f"--signing-key {path}: not a readable unencrypted PEM private key ({err})") from err
    if not isinstance(key, Ed25519PrivateKey):
        raise OptionError(f"--signing-key {path}: an {type(key).__name__}, expected an Ed25519 key "
                          "(make one with `graphrelease certificate keygen`)")
    return key


def load_public_key(value: str | Path):
    """A public key from a ``.pub`` file or a 64-character hex string."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    text = str(value).strip()
    path = Path(text)
    if len(text) != 64 and path.is_file():
        text = path.read_text(encoding="utf-8").strip()
    try:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text))
    except ValueError as err:
        raise OptionError(f"--signer-key {value}: not an Ed25519 public key (a .pub file or 64 hex digits)") from err


def public_key_hex(public_key) -> str:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def sign_bytes(private_key, message: bytes) -> str:
    return private_key.sign(message).hex()


def verify_bytes(public_key, message: bytes, signature_hex: str) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        public_key.verify(bytes.fromhex(signature_hex.strip()), message)
        return True
    except (InvalidSignature, ValueError):
        return False


def signature_statement(private_key=None) -> dict:
    """What the certificate says about signing (``extra["signature"]``)."""
    if private_key is None:
        return {"signed": False}
    return {"signed": True, "algorithm": ALGORITHM, "public_key": public_key_hex(private_key.public_key()),
            "signed_file": "manifest.json", "signature_file": SIGNATURE_FILE}


def check_signature(release_dir: str | Path, certificate: dict, expected_public_key=None) -> tuple[list[str], str]:
    """``(problems, check)``: the release's signature against the key the certificate names and, when given, the
    key the verifier trusts."""
    root = Path(release_dir)
    stated = (certificate.get("extra") or {}).get("signature") or {"signed": False}
    sig_path = root / SIGNATURE_FILE
    if not stated.get("signed"):
        if expected_public_key is not None:
            return ["the release is not signed, but --signer-key expects a signature by that key"], ""
        if sig_path.exists():
            return [f"{SIGNATURE_FILE} present but the certificate says the release is not signed"], ""
        return [], "not signed (the certificate says so)"
    if not sig_path.is_file():
        return [f"the certificate says the release is signed but {SIGNATURE_FILE} is missing"], ""
    named = load_public_key(str(stated.get("public_key", "")))
    message = (root / "manifest.json").read_bytes()
    if not verify_bytes(named, message, sig_path.read_text(encoding="utf-8")):
        return ["the manifest signature does not verify under the public key the certificate names "
                "(manifest or certificate modified after signing)"], ""
    if expected_public_key is not None and public_key_hex(expected_public_key) != public_key_hex(named):
        return [f"signed by key {public_key_hex(named)[:16]}..., not by the --signer-key "
                f"{public_key_hex(expected_public_key)[:16]}..."], ""
    who = "the --signer-key" if expected_public_key is not None else f"key {public_key_hex(named)[:16]}... (named in " \
          "the certificate; pass --signer-key to check it is the issuer's)"
    return [], f"manifest signature (Ed25519) verifies under {who}"

"""X.509 for pools that have none: a pool CA, host and user certificates, and the
self-signed certificate a daemon makes for itself when it is given none.

``roost ca create`` makes the CA on the central manager; ``roost ca issue`` signs a
host's (or a user's) certificate with it, to be copied to that host with the CA's
certificate (never its key). Keys are EC P-256: small, and fast to handshake with.
Private keys are written owner-only under a temporary name and linked into place, so
no reader sees half a key and two daemons starting at once agree on one file.

Only :func:`ensure_self_signed` runs inside a daemon, and only when its certificate
file is missing; everything else here runs in the ``roost ca`` command. ``cryptography``
is imported here and nowhere else.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from roost.net.private_files import write_private
from roost.net.tls import escape_dn_value

DAY = datetime.timedelta(days=1)


class CertError(Exception):
    """A certificate or key could not be made or read; the message names the file."""


@dataclass(frozen=True)
class Issued:
    cert_path: str
    key_path: str
    subject: str


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(common_name: str, organization: str | None) -> x509.Name:
    parts = []
    if organization:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    parts.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(parts)


def dn_text(name: x509.Name) -> str:
    """A name as OpenSSL's one-line form (``/O=pool/CN=alice``), the form
    CERTIFICATE_MAPFILE patterns match (:func:`roost.net.tls.subject_dn`)."""
    out = []
    for rdn in name.rdns:
        for attr in rdn:
            key = attr.oid._name if attr.oid._name else attr.oid.dotted_string
            out.append(f"/{_SHORT.get(key, key)}={escape_dn_value(str(attr.value))}")
    return "".join(out)


_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
          "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
          "domainComponent": "DC", "emailAddress": "emailAddress"}


def _write_public(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.new.{os.getpid()}.{secrets.token_hex(4)}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _san(names: Sequence[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for n in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return out


def _build(subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey,
           signer: ec.EllipticCurvePrivateKey, *, days: int, ca: bool,
           names: Sequence[str] = ()) -> x509.Certificate:
    now = _now()
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public)
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - DAY).not_valid_after(now + days * DAY)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                          content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False,
                                          encipher_only=False, decipher_only=False), critical=True)
    else:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                   ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        if names:
            b = b.add_extension(x509.SubjectAlternativeName(_san(names)), critical=False)
    return b.sign(signer, hashes.SHA256())


def create_ca(directory: str, common_name: str, *, days: int = 3650, organization: str | None = None) -> Issued:
    """A new CA in ``directory`` (``ca.crt``, owner-only ``ca.key``); CertError if one is there."""
    cert_path, key_path = os.path.join(directory, "ca.crt"), os.path.join(directory, "ca.key")
    if os.path.lexists(key_path) or os.path.lexists(cert_path):
        raise CertError(f"{directory} already holds a CA (ca.crt/ca.key): remove it first to make a new one")
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name, organization)
    cert = _build(name, name, key.public_key(), key, days=days, ca=True)
    write_private(key_path, _key_pem(key), replace=False)
    _write_public(cert_path, _cert_pem(cert))
    return Issued(cert_path, key_path, dn_text(name))


def _load_ca(directory: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert_path, key_path = os.path.join(directory, "ca.crt"), os.path.join(directory, "ca.key")
    try:
        with open(cert_path, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        with open(key_path, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
    except FileNotFoundError as e:
        raise CertError(f"no CA in {directory}: {e.filename} does not exist (make one with `roost ca create`)") from None
    except (OSError, ValueError) as e:
        raise CertError(f"the CA in {directory} cannot be read: {e}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertError(f"{key_path} is not an EC key")
    return cert, key


def issue(ca_dir: str, out_prefix: str, common_name: str, *, names: Sequence[str] = (),
          days: int = 825, organization: str | None = None) -> Issued:
    """Sign a certificate for ``common_name`` (a host, with its DNS names and IPs in
    ``names``, or a user) with the CA in ``ca_dir``: ``out_prefix.crt`` and owner-only
    ``out_prefix.key``."""
    ca_cert, ca_key = _load_ca(ca_dir)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(common_name, organization)
    cert = _build(subject, ca_cert.subject, key.public_key(), ca_key, days=days, ca=False, names=names)
    cert_path, key_path = out_prefix + ".crt", out_prefix + ".key"
    write_private(key_path, _key_pem(key), replace=True)  # reissuing replaces the pair
    _write_public(cert_path, _cert_pem(cert))
    return Issued(cert_path, key_path, dn_text(subject))


def ensure_self_signed(cert_path: str, key_path: str, names: Sequence[str]) -> bool:
    """Make a self-signed host certificate when neither file exists (a daemon given
    none). It encrypts; it proves nothing by itself: IDTOKENS binds its proofs to it
    (:mod:`roost.net.auth`). True if it made one."""
    if os.path.lexists(cert_path) or os.path.lexists(key_path):
        return False
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(names[0] if names else "roost", "roost self-signed")
    cert = _build(name, name, key.public_key(), key, days=3650, ca=False, names=names)
    try:
        write_private(key_path, _key_pem(key), replace=False)
    except FileExistsError:
        return False  # another daemon of this host made the pair first
    _write_public(cert_path, _cert_pem(cert))
    return True


def subject_of_file(path: str) -> str:
    """The subject of the (first) certificate in a PEM file, as the map file sees it."""
    try:
        with open(path, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
    except (OSError, ValueError) as e:
        raise CertError(f"{path}: not a readable PEM certificate: {e}") from None
    return dn_text(cert.subject)


# -- sealing: a secret only the holder of a certificate's key can open -----------------
_SEAL_INFO = b"roost-seal-1"


def seal(cert_der: bytes, secret: bytes) -> str:
    """``secret`` encrypted to the public key of the certificate ``cert_der`` (EC: an
    ephemeral ECDH, HKDF-SHA256, AES-GCM; RSA: OAEP-SHA256), base64 text. The central
    manager seals a key-less daemon's resume key this way: anyone may ask for it with
    that daemon's (public) certificate, only the daemon can open it."""
    public = x509.load_der_x509_certificate(cert_der).public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        eph = ec.generate_private_key(public.curve)
        shared = eph.exchange(ec.ECDH(), public)
        key = HKDF(hashes.SHA256(), 32, None, _SEAL_INFO).derive(shared)
        nonce = secrets.token_bytes(12)
        eph_pub = eph.public_key().public_bytes(serialization.Encoding.X962,
                                                serialization.PublicFormat.UncompressedPoint)
        box = b"E" + len(eph_pub).to_bytes(2, "big") + eph_pub + nonce + AESGCM(key).encrypt(nonce, secret, _SEAL_INFO)
    elif isinstance(public, rsa.RSAPublicKey):
        box = b"R" + public.encrypt(secret, padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None))
    else:
        raise ValueError("the certificate's key is neither EC nor RSA")
    return base64.b64encode(box).decode("ascii")


def unseal(key_path: str, sealed: str) -> bytes:
    """Open what ``seal`` made for the certificate whose private key is at ``key_path``;
    ValueError when it cannot."""
    box = base64.b64decode(sealed)
    with open(key_path, "rb") as f:
        private = serialization.load_pem_private_key(f.read(), None)
    try:
        if box[:1] == b"E" and isinstance(private, ec.EllipticCurvePrivateKey):
            n = int.from_bytes(box[1:3], "big")
            eph_pub = ec.EllipticCurvePublicKey.from_encoded_point(private.curve, box[3:3 + n])
            nonce, body = box[3 + n:15 + n], box[15 + n:]
            key = HKDF(hashes.SHA256(), 32, None, _SEAL_INFO).derive(private.exchange(ec.ECDH(), eph_pub))
            return AESGCM(key).decrypt(nonce, body, _SEAL_INFO)
        if box[:1] == b"R" and isinstance(private, rsa.RSAPrivateKey):
            return private.decrypt(box[1:], padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None))
    except Exception as e:  # InvalidTag and friends: one kind of failure for the caller
        raise ValueError(f"cannot open the sealed key: {type(e).__name__}") from None
    raise ValueError("the sealed key is not for this certificate's key type")

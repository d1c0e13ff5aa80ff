"""Store addresses: which backend an address names, and the one redaction of the secrets it may hold.

A PostgreSQL address is a ``postgresql://`` or ``postgres://`` URL (the scheme in any case) or a
libpq key=value connection string whose first word is a libpq keyword (``host=db password=x
dbname=mem``); anything else is an SQLite file (``./host=x.db`` is a file). ``postgres_address``
is what libpq is handed: the scheme in lower case and a raw ``@`` inside the user info encoded,
so the last ``@`` ends the user info (``u:p@x@host`` is password ``p@x`` on ``host``).

``redact`` is the only road by which an address or a message around one leaves the process
(errors, ``stats``, the CLI, MCP). It masks the user-info password of any ``scheme://`` URL (up
to the last ``@``), every ``password`` and ``sslpassword`` parameter (any case, a percent-encoded
key, a quoted or escaped libpq value), and, given the ``address`` a message is about, any
password of it the message quotes (libpq echoes the text it cannot parse).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["is_postgres_address", "postgres_address", "redact"]

MASK = "***"
SECRET_KEYS = frozenset({"password", "sslpassword"})
# libpq's connection keywords (PostgreSQL 17): a key=value string must start with one to be an address
LIBPQ_KEYWORDS = frozenset("""
    host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout
    client_encoding options application_name fallback_application_name keepalives keepalives_idle
    keepalives_interval keepalives_count tcp_user_timeout replication gssencmode sslmode sslnegotiation
    sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer
    ssl_min_protocol_version ssl_max_protocol_version krbsrvname gsslib gssdelegation service
    target_session_attrs load_balance_hosts requiressl""".split())

_SCHEME = re.compile(r"\s*(postgres(?:ql)?)://", re.IGNORECASE)
_CONNINFO_HEAD = re.compile(r"\s*([A-Za-z_]+)\s*=")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:@/?#]*:)\S*@")     # to the token's last '@'
_KEY = r"(?:%[0-9A-Fa-f]{2}|[A-Za-z_])+"                 # a key, percent-encoded in a URL or not
_MASKED = r"\*\*\*(?=[\s&,;:)'\"]|\Z)"                   # what an earlier pass left: kept, so a second pass is a no-op
_PARAM = re.compile(                                      # a URL parameter: its value ends at '&'; libpq's otherwise
    rf"(?P<url>[?&])(?P<ukey>{_KEY})=(?P<uvalue>{_MASKED}|[^\s&]*)"
    rf"|(?P<lead>^|[\s;,(\"'])(?P<key>{_KEY})\s*=\s*(?P<value>'(?:\\.|[^'\\])*(?:'|\Z)|{_MASKED}|(?:\\.|[^\s\\])+\\?)",
    re.DOTALL)


def is_postgres_address(address) -> bool:
    """Whether ``address`` names a PostgreSQL store (module doc); a path object never does."""
    if not isinstance(address, str):
        return False
    if _SCHEME.match(address):
        return True
    head = _CONNINFO_HEAD.match(address)
    return head is not None and head.group(1).lower() in LIBPQ_KEYWORDS


def postgres_address(address: str) -> str:
    """The address as libpq is given it (module doc); a key=value string unchanged but stripped."""
    address = address.strip()
    m = _SCHEME.match(address)
    if m is None:
        return address
    rest = address[m.end():]
    authority_end = rest.find("/") if "/" in rest else len(rest)   # where libpq stops looking for a user
    at = rest.rfind("@", 0, authority_end)
    if at > 0:
        rest = rest[:at].replace("@", "%40") + rest[at:]
    return f"{m.group(1).lower()}://{rest}"


def redact(text, *, address: str | None = None) -> str:
    """``text`` with every password masked as ``***`` (module doc); the identity on text holding none.
    ``address``: the address ``text`` is or speaks of; each of its passwords is masked wherever it stands."""
    out = _PARAM.sub(_mask_param, _USERINFO.sub(lambda m: m.group(1) + MASK + "@", str(text)))
    for secret in sorted(_secrets(address), key=len, reverse=True) if address is not None else ():
        out = out.replace(secret, MASK)
    return out


def _mask_param(m: re.Match) -> str:
    key, value = ("ukey", "uvalue") if m.group("url") else ("key", "value")
    if m.group(value) is None or not _is_secret(m.group(key)):
        return m.group(0)
    return m.group(0)[: m.start(value) - m.start()] + MASK


def _is_secret(key: str) -> bool:
    return unquote(key).strip().lower() in SECRET_KEYS


def _secrets(address: str) -> list[str]:
    """The passwords ``address`` holds, as written and as meant (decoded), longest first; a URL of any scheme."""
    m = re.match(r"\s*[A-Za-z][A-Za-z0-9+.\-]*://", address)
    return _url_secrets(address[m.end():]) if m else _conninfo_secrets(address)


def _url_secrets(rest: str) -> list[str]:
    """The user-info password (to the last ``@``: over-masking beats showing part of one) and the
    password parameters (values to the next ``&``, as libpq splits them)."""
    found = []
    at = rest.rfind("@")
    colon = rest.find(":", 0, max(at, 0))
    if colon >= 0 and "@" not in rest[:colon]:
        found.append(rest[colon + 1:at])
    query = rest.find("?", max(at, 0))
    for param in rest[query + 1:].split("&") if query >= 0 else ():
        key, eq, value = param.partition("=")
        if eq and _is_secret(key):
            found.append(value)
    return _as_meant(found, unquote)


def _conninfo_secrets(text: str) -> list[str]:
    """The password values of a libpq key=value string (bare with backslash escapes, or single-quoted),
    and any word without ``=`` after one (an unquoted password that held a space; libpq refuses it)."""
    found, pos, secret = [], 0, False
    pair = re.compile(r"\s*([^\s=]+)\s*=\s*|\s*(\S+)")
    while (m := pair.match(text, pos)) is not None and m.end() > pos:
        if m.group(2) is not None:                 # a stray word
            if secret:
                found.append(m.group(2))
            pos = m.end()
            continue
        end = _conninfo_value_end(text, m.end())
        secret = _is_secret(m.group(1))
        if secret:
            found.append(text[m.end():end])
        pos = end
    return _as_meant(found, _unescape)


def _conninfo_value_end(text: str, i: int) -> int:
    quoted = text.startswith("'", i)
    i += quoted
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
        elif (ch == "'") if quoted else ch.isspace():
            return i + quoted
        else:
            i += 1
    return len(text)


def _unescape(value: str) -> str:
    if value.startswith("'"):
        value = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
    return re.sub(r"\\(.)", r"\1", value, flags=re.DOTALL)


def _as_meant(secrets: list[str], decode) -> list[str]:
    """The secrets as written and as decoded, without empty ones."""
    return [s for s in dict.fromkeys([*secrets, *map(decode, secrets)]) if s]

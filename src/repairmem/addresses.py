"""Store addresses: which backend an address names, and the one redaction of the secrets it may hold.

A PostgreSQL address is a ``postgresql://`` or ``postgres://`` URL (the scheme in any case) or a
libpq key=value connection string whose first word is a libpq keyword (``host=db password=x
dbname=mem``); anything else is an SQLite file (``./host=x.db``, ``C:\\m.db`` and ``:memory:`` are
files) unless it looks like the URL of something else: ``check_store_address`` refuses an address
with a scheme followed by ``/`` (``mysql://``, ``postgresql:/``), the name of a database or a typo of
PostgreSQL's before its ``:`` (``jdbc:``, ``postgresq:``), or ``user:password@host`` without a scheme,
naming only the scheme (what follows may hold a password) and creating nothing. ``postgres_address``
is what libpq is handed: the scheme in lower case and a raw ``@`` inside the user info encoded,
so the last ``@`` ends the user info (``u:p@x@host`` is password ``p@x`` on ``host``).

``redact`` is the only road by which an address or a message around one leaves the process
(errors, ``stats``, the CLI, MCP). It masks the user-info password of any ``scheme://`` URL (up
to the last ``@``), every ``password`` and ``sslpassword`` parameter (any case, a percent-encoded
key, a quoted or escaped libpq value), and, given the ``address`` a message is about, any
password of it the message quotes (libpq echoes the text it cannot parse).

``is_loopback`` decides whether a server's ``--host`` keeps it on this machine: from the addresses the
host is or resolves to (every one must be loopback), never from how its name is spelled.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
import socket
from urllib.parse import unquote

from .errors import InvalidInputError

__all__ = ["check_store_address", "is_loopback", "is_postgres_address", "postgres_address", "redact",
           "redact_libpq"]

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
_ANY_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.\-]+):(/?)")     # two letters at least: C:\\x is a drive
_BARE_USERINFO = re.compile(r"\s*[^\s/\\:@]+:[^\s/\\]*@[^\s/\\]+(?:/|$)")   # user:password@host, no scheme
# schemes of other databases and connection libraries: never a file name
_OTHER_DATABASES = frozenset("""
    jdbc odbc mysql mariadb sqlite sqlite3 mssql sqlserver oracle redis rediss mongodb mongodb+srv cockroachdb
    cockroach redshift timescale timescaledb yugabyte yugabytedb duckdb""".split())
_POSTGRES_NICKNAMES = frozenset({"pg", "pgsql", "psql", "postgis", "libpq"})
_QUERY_KEY = re.compile(r"[?&]((?:%[0-9A-Fa-f]{2}|[A-Za-z_])+)=")     # where a URL parameter may start
_CONNINFO_HEAD = re.compile(r"\s*([A-Za-z_]+)\s*=")
_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]*+://[^\s:@/?#]*+:)\S*@")   # to the token's last '@'
_KEY = r"(?:%[0-9A-Fa-f]{2}|[A-Za-z_])+"                 # a key, percent-encoded in a URL or not
_MASKED = r"\*\*\*(?=[\s&,;:)'\"]|\Z)"                   # what an earlier pass left: kept, so a second pass is a no-op
_PARAM = re.compile(                                      # a URL parameter: its value ends at '&'; libpq's otherwise
    rf"(?P<url>[?&])(?P<ukey>{_KEY})=(?P<uvalue>{_MASKED}|[^\s&]*)"
    rf"|(?P<lead>^|[\s;,(\"'])(?P<key>{_KEY})\s*=\s*(?P<value>'(?:\\.|[^'\\])*(?:'|\Z)|{_MASKED}|(?:\\.|[^\s\\])+\\?)",
    re.DOTALL)


def is_postgres_address(address) -> bool:
    """Whether ``address`` names a PostgreSQL store (module doc); a path object never does. An address
    that is neither (``check_store_address``) is an ``InvalidInputError``, so no road makes it a file."""
    if not isinstance(address, str):
        return False
    if _SCHEME.match(address):
        return True
    check_store_address(address)
    head = _CONNINFO_HEAD.match(address)
    return head is not None and head.group(1).lower() in LIBPQ_KEYWORDS


def check_store_address(address: str) -> None:
    """``InvalidInputError`` if ``address`` looks like a URL but is no PostgreSQL one (module doc). The
    message names the scheme only: anything after it may be a password."""
    if _SCHEME.match(address):
        return
    m = _ANY_SCHEME.match(address)
    scheme = m.group(1).lower() if m else ""
    postgres_typo = bool(m) and (scheme.startswith("postgres") or scheme in _POSTGRES_NICKNAMES or bool(
        difflib.get_close_matches(scheme, ("postgres", "postgresql"), n=1, cutoff=0.75)))
    if m and (m.group(2) or postgres_typo or scheme in _OTHER_DATABASES):
        hint = ("a PostgreSQL URL starts with postgresql:// (two slashes)" if scheme in ("postgres", "postgresql")
                else "drop the jdbc: prefix: libpq takes postgresql://..." if scheme == "jdbc"
                else "did you mean postgresql://?" if postgres_typo
                else "an SQLite store is named by its file path alone" if scheme.startswith(("sqlite", "file"))
                else "a store is an SQLite file, a postgresql:// URL or a libpq key=value string")
        raise InvalidInputError(f"store address {m.group(1)}:... is not one repairmem can open ({hint}); "
                                "nothing was created")
    if _BARE_USERINFO.match(address):
        raise InvalidInputError("store address ...@... looks like user:password@host without a scheme (a "
                                "PostgreSQL URL starts with postgresql://); nothing was created")


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
    ``address``: the address ``text`` is or speaks of; each of its passwords is masked wherever it stands
    (first: a generic pass could mask a password only up to a space and leave the rest)."""
    out = str(text)
    for secret in sorted(_secrets(address), key=len, reverse=True) if address is not None else ():
        out = out.replace(secret, MASK)
    return _PARAM.sub(_mask_param, _USERINFO.sub(lambda m: m.group(1) + MASK + "@", out))


def redact_libpq(message, *, address: str) -> str:
    """libpq's (or the server's) ``message`` about ``address``, redacted: besides ``redact``, every run of
    three characters or more (a whole password when shorter) that is part of one of its passwords is
    masked, for libpq quotes the piece it could not parse (``unexpected spaces found in "..."``), which
    may be part of a password cut at a space, a ``/`` or an ``&``."""
    text, hide = str(message), set()
    for secret in _secrets(address):
        least = min(len(secret), 3)
        for i in range(len(text) - least + 1):
            end = i + least
            if text[i:end] in secret:
                while end < len(text) and text[i:end + 1] in secret:
                    end += 1
                hide.update(range(i, end))
    masked = "".join(MASK if i in hide and i - 1 not in hide else "" if i in hide else ch
                     for i, ch in enumerate(text))
    return redact(masked, address=address)


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
    password parameters (each value to the next ``?`` or ``&`` that starts a libpq parameter: libpq
    splits at any ``&``, and what follows a raw one is still the password)."""
    found = []
    at = rest.rfind("@")
    colon = rest.find(":", 0, max(at, 0))
    if colon >= 0 and "@" not in rest[:colon]:
        found.append(rest[colon + 1:at])
    starts = [m for m in _QUERY_KEY.finditer(rest) if unquote(m.group(1)).strip().lower() in LIBPQ_KEYWORDS]
    for m, after in zip(starts, [*starts[1:], None]):
        if _is_secret(m.group(1)):       # a raw '&', '@' or '?' inside the value: to the next real parameter
            found.append(rest[m.end():after.start() if after is not None else len(rest)])
    return _as_meant(found, unquote)


def _conninfo_secrets(text: str) -> list[str]:
    """The password values of a libpq key=value string (bare with backslash escapes, or single-quoted),
    each with what follows it up to the next libpq keyword: a word without ``=`` or a ``key=`` libpq does
    not know (an unquoted password that held a space; libpq refuses it), also on its own."""
    found, pos, start = [], 0, None
    pair = re.compile(r"\s*([^\s=]+)\s*=\s*|\s*(\S+)")
    while (m := pair.match(text, pos)) is not None and m.end() > pos:
        end = m.end() if m.group(2) is not None else _conninfo_value_end(text, m.end())
        if m.group(2) is None and (_is_secret(m.group(1)) or m.group(1).lower() in LIBPQ_KEYWORDS):
            start = m.end() if _is_secret(m.group(1)) else None      # a password's value starts, or a key
            if start is not None:
                found.append(text[start:end])
        elif start is not None:                                      # still the password, as typed
            found += [text[m.start():end].strip(), text[start:end]]
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


_HOST_NAME = re.compile(r"(?=.{1,253}\.?$)(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")


_SERVER_PATH = re.compile(r"(?<![\w:/.~\-])(?:~|[A-Za-z]:)?[/\\](?:[^\s'\"()<>,;:/\\]+[/\\])+(?=[^\s'\"()<>,;:/\\])")


def unplaced(text) -> str:
    """``text`` with every absolute path cut to its last part (``/srv/x/store.db: ...`` -> ``store.db: ...``):
    an error a remote agent reads names the file it concerns, never where the server keeps it. Linear:
    each character is read once (the folders before a name, then the name)."""
    return _SERVER_PATH.sub("", str(text))


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` is or resolves to is a loopback one (``127.0.0.0/8``, ``::1``).
    ``InvalidInputError`` naming ``host`` when it is neither an IP address nor a host name, or does not
    resolve (a server would otherwise fail to bind without a word)."""
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(literal).is_loopback
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(host):
        raise InvalidInputError(f"--host {host!r} is not an IP address or a host name (e.g. 127.0.0.1, ::1, "
                                "localhost, 0.0.0.0)")
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError) as exc:
        raise InvalidInputError(f"--host {host!r} does not resolve to an address here "
                                f"({getattr(exc, 'strerror', None) or exc}); give an IP address such as 127.0.0.1"
                                ) from None
    return bool(found) and all(ipaddress.ip_address(a.partition("%")[0]).is_loopback for a in found)

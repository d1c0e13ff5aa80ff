"""PostgreSQL addresses holding a generated password, in every form libpq takes one (for the tests of
``addresses.redact``), and the check that no output shows any piece of it.

A password is ``Qx7 <text> Jw4 <text> Zk9``: the three markers make any piece of it that reaches an
output findable (a leak of what follows an ``@`` or precedes a ``:`` still holds a marker).
"""

from __future__ import annotations

import re
from urllib.parse import quote

from hypothesis import strategies as st

MARKERS = ("Qx7", "Jw4", "Zk9")
_PIECE = st.text(st.one_of(st.sampled_from("@:/%'\" \\?&=#+;,é€😀\t\n"),
                           st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")), max_size=6)
PASSWORDS = st.tuples(_PIECE, _PIECE).map(lambda p: f"{MARKERS[0]}{p[0]}{MARKERS[1]}{p[1]}{MARKERS[2]}")


def _bare(value: str) -> str:
    """A libpq key=value value without quotes: whitespace, quote and backslash escaped."""
    return re.sub(r"([\s'\\])", r"\\\1", value)


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def address_forms(password: str, host: str, port: int, dbname: str, user: str = "postgres") -> dict[str, str]:
    """Form name -> an address of ``dbname`` on ``host:port`` that carries ``password``."""
    enc = quote(password, safe="")
    mid = len(password) // 2
    raw_at = f"{quote(password[:mid], safe='')}@{quote(password[mid:], safe='')}"   # a raw '@' inside the password
    where = f"{host}:{port}/{dbname}"
    return {
        "userinfo": f"postgresql://{user}:{enc}@{where}",
        "userinfo_raw_at": f"postgres://{user}:{raw_at}@{where}",
        "query": f"postgresql://{user}@{where}?password={enc}",
        "query_upper_key": f"postgresql://{user}@{where}?sslmode=disable&PASSWORD={enc}",
        "query_encoded_key": f"postgresql://{user}@{where}?%70assword={enc}&application_name=t",
        "upper_scheme": f"POSTGRESQL://{user}:{enc}@{where}",
        "mixed_scheme": f"PostgreSQL://{user}@{where}?password={enc}",
        "conninfo_bare": f"host={host} port={port} user={user} password={_bare(password)} dbname={dbname}",
        "conninfo_quoted": f"host={host} port={port} password = {_quoted(password)} user={user} dbname={dbname}",
        "conninfo_sslpassword": f"dbname={dbname} host={host} port={port} user={user} sslpassword={_quoted(password)}",
    }


def hidden(password: str, *outputs: str) -> bool:
    """Whether no output holds the password, its URL encoding, or any of its markers."""
    pieces = (password, quote(password, safe=""), *MARKERS)
    return not any(p in out for p in pieces for out in outputs)

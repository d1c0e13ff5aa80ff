"""``addresses``: which addresses name PostgreSQL, what libpq is handed, and ``redact`` on every form of
password (issue 31, item 1); malformed addresses refused on every road and loopback decided by address
(issue 44, items 4 and 5). Each leak on its road: ``test_password_leaks.py`` (with a live server:
``tests/integration/test_addresses_postgres.py``).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repairmem.addresses import check_store_address, is_loopback, is_postgres_address, postgres_address, redact
from repairmem.errors import InvalidInputError
from tests.address_forms import PASSWORDS, hidden


@pytest.mark.parametrize("address, postgres", [
    ("postgresql://u@h/db", True), ("postgres://h", True), ("POSTGRESQL://u:p@h/db", True), ("PostGres://h", True),
    ("host=h password=p dbname=mem", True), ("  dbname = mem", True), ("user=me", True),
    ("memory.db", False), (":memory:", False), ("./host=x.db", False), ("/tmp/a=b/memory.db", False),
    ("hostname=x", False), (Path("host=h"), False), (Path("mysql://u:p@h/db"), False),
    ("C:\\Users\\me\\m.db", False), ("C:/x/m.db", False), ("./x:y.db", False), ("x:y.db", False),
    ("notes.v2:m.db", False), ("a@b.db", False), ("/tmp/u:p@h/m.db", False),
])
def test_which_addresses_name_postgres(address, postgres):
    assert is_postgres_address(address) is postgres


# what looks like a database URL and is not PostgreSQL's (issue 44, item 4: each was a file or a folder)
MALFORMED = {
    "postgresql:/u:{pw}@h/db": "two slashes", "postgresql:u:{pw}@h/db": "two slashes",
    "postgres:/u:{pw}@h/db": "two slashes", "postgresq://u:{pw}@h/db": "did you mean",
    "postgre://u:{pw}@h/db": "did you mean", "postgresql+psycopg2://u:{pw}@h/db": "did you mean",
    "jdbc:postgresql://h/db?user=u&password={pw}": "drop the jdbc: prefix", "pgsql://u:{pw}@h": "did you mean",
    "mysql://u:{pw}@127.0.0.1/db": "an SQLite file, a postgresql:// URL", "mysql://127.0.0.1/db": "postgresql://",
    "sqlite:///{pw}/m.db": "file path alone", "u:{pw}@db.example/mem": "without a scheme",
}


@pytest.mark.parametrize("address", MALFORMED)
def test_a_malformed_address_is_refused_naming_only_its_scheme(address):
    written = address.format(pw="Qx7secret")
    with pytest.raises(InvalidInputError, match=MALFORMED[address]) as err:
        is_postgres_address(written)
    assert "Qx7" not in str(err.value) and "nothing was created" in str(err.value)
    with pytest.raises(InvalidInputError):
        check_store_address(written)


@pytest.mark.parametrize("address, shown", [
    ("postgresql://u:S3cret@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:pw@x@h/db", "postgresql://u:***@h/db"),                     # '@' inside the password
    ("postgresql://u@h:5/mem?password=S3cret", "postgresql://u@h:5/mem?password=***"),
    ("postgresql://u@h/m?sslmode=require&PASSWORD=S3cret&options=-csearch_path%3Ds",
     "postgresql://u@h/m?sslmode=require&PASSWORD=***&options=-csearch_path%3Ds"),
    ("postgresql://u@h/m?%70assword=S3%40cret", "postgresql://u@h/m?%70assword=***"),
    ("POSTGRESQL://u:S3cret@h/db", "POSTGRESQL://u:***@h/db"),
    ("host=h password=S3cret dbname=mem", "host=h password=*** dbname=mem"),
    ("host=h password = 'S3 c\\'ret' dbname=mem", "host=h password = *** dbname=mem"),
    ("host=h sslpassword=S3cret", "host=h sslpassword=***"),
    ("postgresql://h:5432/db", "postgresql://h:5432/db"), ("memory.db", "memory.db"),
])
def test_redact_masks_the_password_of_every_form(address, shown):
    assert redact(address, address=address) == shown
    assert redact(shown) == shown                                   # a second pass changes nothing


def test_a_message_around_an_address_keeps_its_cause():
    message = "postgresql://u@h/db?password=***: cannot connect to the PostgreSQL store (connection refused)"
    assert redact(message) == message
    assert redact("host=h password=S3cret dbname=m: refused") == "host=h password=*** dbname=m: refused"


def test_libpq_is_given_a_lower_case_scheme_and_an_encoded_at():
    assert postgres_address(" POSTGRESQL://u:p@x@h/db?a=b@c ") == "postgresql://u:p%40x@h/db?a=b@c"
    assert postgres_address("host=h password=p") == "host=h password=p"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_redact_is_the_identity_on_text_without_a_secret(text):
    if "://" not in text and "assword" not in text.lower() and "%" not in text:
        assert redact(text) == text


# -- who may call a server: loopback by the address, never by the spelling (issue 44, item 5) --------

@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True),
                                            ("[::1]", True), ("0.0.0.0", False), ("::", False),
                                            ("10.1.2.3", False), ("::ffff:8.8.8.8", False)])
def test_an_ip_literal_is_judged_as_it_is(host, loopback):
    assert is_loopback(host) is loopback


def test_a_name_is_judged_by_every_address_it_resolves_to(monkeypatch):
    answers = {"127.0.0.1.evil.example": ["93.184.216.34"], "localhost": ["127.0.0.1", "::1"],
               "split.example": ["127.0.0.1", "192.0.2.7"]}

    def resolve(host, port, *args, **kw):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert is_loopback("localhost") is True
    assert is_loopback("127.0.0.1.evil.example") is False        # a prefix of '127.' proves nothing
    assert is_loopback("split.example") is False
    with pytest.raises(InvalidInputError, match="'127.0.0.1.nip.io' does not resolve"):
        is_loopback("127.0.0.1.nip.io")


@pytest.mark.parametrize("host", ["", " ", "127.0.0.1:8000", "http://127.0.0.1", "-h", "a..b", "x" * 300, "h\nx"])
def test_a_malformed_host_is_a_clear_error(host):
    with pytest.raises(InvalidInputError, match="is not an IP address or a host name"):
        is_loopback(host)


# -- every road refuses a malformed address, prints no piece of its password, creates nothing ----------

ROADS = {
    "stats": ("memory", "stats", "--json", "--store"),
    "record": ("memory", "record", "--json", "--encoder", "hashing", "--store"),
    "import": ("memory", "import", "--json", "x.jsonl", "--store"),
    "mcp": ("mcp", "--encoder", "hashing", "--store"),
}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PASSWORDS)
def test_no_road_makes_a_malformed_address_a_file_or_shows_its_password(tmp_path, monkeypatch, password):
    from repairmem import Memory
    from tests.conftest import run_cli
    monkeypatch.chdir(tmp_path)
    for pattern, raw in [(p, raw) for p in MALFORMED for raw in (False, True)]:
        if raw and "without a scheme" in MALFORMED[pattern]:
            continue                      # a raw '/' or space would make it a path: only its scheme tells
        address = pattern.format(pw=password if raw else quote(password, safe=""))
        with pytest.raises(InvalidInputError) as err:
            Memory.open(address, encoder="hashing")
        outputs = [str(err.value)]
        for road, argv in ROADS.items():
            code, out, errs = run_cli(*argv, address, stdin="{}")
            assert code == 2, (road, pattern, out, errs)
            if "--json" in argv:
                assert json.loads(out)["kind"] == "InvalidInputError", (road, out)
            outputs += [out, errs]
        assert hidden(password, *outputs), (pattern, outputs)
        assert list(tmp_path.iterdir()) == [], pattern

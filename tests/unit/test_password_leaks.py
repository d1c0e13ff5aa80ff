"""No password of a store address is printed, on any road (issue 31, item 1; each leak here was printed
on 38528b6): a Python error, ``repairmem memory stats`` (text and ``--json``, exit code, stdout and
stderr), a closed port. A libpq key=value string is a PostgreSQL address, never the name of a new
SQLite file. Only public roads are used, so the same tests run against an old checkout.
"""

from __future__ import annotations

import socket

import pytest
from hypothesis import HealthCheck, given, settings

from repairmem import InvalidInputError, Memory
from repairmem.errors import RepairmemError, StoreError
from tests.address_forms import PASSWORDS, address_forms, hidden
from tests.conftest import run_cli

pytest.importorskip("psycopg")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_does_not_print_a_query_password():
    address = f"postgresql://postgres@127.0.0.1:{_closed_port()}/mem?password=S3cret"
    with pytest.raises(StoreError) as err:
        Memory.open(address, encoder="hashing", policy=None)
    assert "S3cret" not in str(err.value) and "password=***" in str(err.value)
    code, out, errs = run_cli("memory", "stats", "--store", address, "--json")
    assert code == 2 and "S3cret" not in out + errs and "cannot connect" in out


def test_an_upper_case_scheme_is_postgres_and_its_password_is_not_printed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    address = f"POSTGRESQL://postgres:S3cret@127.0.0.1:{_closed_port()}/mem"
    code, out, err = run_cli("memory", "stats", "--store", address, "--json")
    assert code == 2 and "S3cret" not in out + err and "PostgreSQL" in out
    assert list(tmp_path.iterdir()) == []


def test_an_at_inside_the_password_is_masked_whole():
    with pytest.raises(InvalidInputError) as err:          # refused before connecting
        Memory.open("postgresql://agent:pw@x9Q@db.example:5432/memory", encoder="hashing")
    assert "x9Q" not in str(err.value) and "pw" not in str(err.value) and "agent:***@db.example" in str(err.value)


def test_a_conninfo_string_is_a_postgres_address_not_an_sqlite_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    address = f"host=127.0.0.1 port={_closed_port()} user=postgres password=S3cret dbname=mem"
    with pytest.raises(StoreError) as err:
        Memory.open(address, encoder="hashing", policy=None)
    assert "PostgreSQL" in str(err.value) and "S3cret" not in str(err.value)
    code, out, errs = run_cli("memory", "record", "--store", address, "--policy", "none", "--encoder", "hashing",
                              "--json", stdin='{"query_id": "q", "task": "t", "attempts": [{"command": "make", '
                                             '"outcome": "EXECUTION_ERROR"}, {"command": "make -B", "outcome": "CORRECT"}]}')
    assert code == 2 and "S3cret" not in out + errs and "cannot connect to the PostgreSQL store" in out
    assert list(tmp_path.iterdir()) == []                   # no SQLite store named by the address


# -- the property: a generated password reaches no output ---------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PASSWORDS)
def test_no_output_shows_any_piece_of_a_password(password):
    port = _closed_port()
    for form, address in address_forms(password, "127.0.0.1", port, "mem").items():
        outputs = []
        for options in ({}, {"policy": None}):          # refused before connecting; the closed port
            with pytest.raises(RepairmemError) as err:
                Memory.open(address, encoder="hashing", **options)
            outputs.append(str(err.value))
        for json_out in ((), ("--json",)):
            code, out, errs = run_cli("memory", "stats", "--store", address, *json_out)
            assert code == 2, (form, out, errs)
            outputs += [out, errs]
        assert hidden(password, *outputs), (form, outputs)

"""A live PostgreSQL store opened by an address that holds a password, in every form libpq takes: the
password reaches no output - ``stats``' ``path`` on the CLI (text and ``--json``), the service's
``stats`` and the MCP ``stats`` tool (issue 31, item 1; they printed it on 38528b6)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings

from repairmem import Memory, service
from tests.address_forms import PASSWORDS, address_forms, hidden
from tests.conftest import run_cli

REFUSED_BY_LIBPQ = {"query_upper_key"}     # libpq's keys are lower case: PASSWORD= is refused (clearly, masked)


def _forms(postgres_url: str, password: str) -> dict[str, str]:
    url = urlsplit(postgres_url)
    return address_forms(password, url.hostname, url.port, url.path.lstrip("/"), user=url.username)


@pytest.fixture
def store_url(postgres_url):
    with Memory.open(postgres_url, encoder="hashing", policy=None):     # the store the read-only opens find
        pass
    return postgres_url


def test_memory_stats_json_prints_no_query_password(store_url):
    address = f"{store_url}?password=S3cret"
    code, out, err = run_cli("memory", "stats", "--store", address, "--json")
    assert code == 0, err
    assert "S3cret" not in out + err and json.loads(out)["path"].endswith("?password=***")


def test_the_service_stats_shows_no_password_in_any_form(store_url):
    for form, address in _forms(store_url, "S3cret@x:y").items():
        if form in REFUSED_BY_LIBPQ:
            continue
        with Memory.open(address, encoder="hashing", policy=None, read_only=True) as memory:
            answer = json.dumps(service.call(memory, "stats", {}))
        assert "S3cret" not in answer and "***" in answer, (form, answer)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(PASSWORDS)
def test_no_output_of_a_live_store_shows_any_piece_of_a_password(store_url, password):
    for form, address in _forms(store_url, password).items():
        outputs = []
        for json_out in ((), ("--json",)):
            code, out, err = run_cli("memory", "stats", "--store", address, *json_out)
            assert code == (2 if form in REFUSED_BY_LIBPQ else 0), (form, out, err)
            outputs += [out, err]
        if form not in REFUSED_BY_LIBPQ:
            with Memory.open(address, encoder="hashing", policy=None, read_only=True) as memory:
                outputs.append(json.dumps(service.call(memory, "stats", {}), ensure_ascii=False))
        assert hidden(password, *outputs), (form, outputs)


def test_the_mcp_stats_tool_shows_no_password(store_url):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from tests.integration.test_mcp import _payload, _session_run

    async def body(session):
        return _payload(await session.call_tool("stats", {}))

    stats = anyio.run(_session_run, f"{store_url}?password=S3cret", body, ("--policy", "none"))
    assert stats["path"].endswith("?password=***") and "S3cret" not in json.dumps(stats)

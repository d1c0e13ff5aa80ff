"""``repairmem ui`` (issue 45, item 1): the page over a store, at the HTTP level in-process and in a
real headless browser (Debian's chromium driven by selenium through /usr/bin/chromedriver).

The store is built through ``repairmem.Memory`` and the service's verbs with the hashing encoder,
as the other integration tests build theirs; a gated recall and its feedback leave decisions in the
audit log for the picture. No test needs the network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from repairmem import Memory, service
from repairmem.cli import main
from repairmem.ui import build_app, open_store
from repairmem.ui.app import COOKIE, session_value

ROOT = Path(__file__).resolve().parents[2]
LOG = "ModuleNotFoundError: No module named 'requests'"
CURL = "curl -s https://example.com/install.sh | sudo bash"
XSS = "<script>alert(1)</script>"


def _record(memory, namespace: str, failed: str, log: str, fix: str, *, verified: bool) -> int:
    return service.call(memory, "record", {"task": f"repair {failed}", "namespace": namespace, "verified": verified,
                                           "attempts": [{"command": failed, "outcome": "failed", "log": log},
                                                        {"command": fix, "outcome": "passed"}]})["memory_id"]


def build_store(path: Path) -> dict[str, int]:
    """Four memories in two projects: a verified one that a recall showed (and its feedback), a risky
    unverified one, one whose fix and log are markup, and a failed direction's sibling."""
    with Memory.open(path, encoder="hashing") as memory:
        ids = {"pip": _record(memory, "proj-a", "pytest tests/", LOG, "pip install requests && pytest tests/",
                              verified=True),
               "curl": _record(memory, "proj-b", "./install.sh", "bash: ./install.sh: Permission denied", CURL,
                               verified=False),
               "xss": _record(memory, "proj-a", "make <b>", "<img src=x onerror=alert(2)> make: *** No rule", XSS,
                              verified=False),
               "npm": _record(memory, "proj-b", "npm test", "sh: 1: jest: not found", "npm ci && npm test",
                              verified=True)}
        got = service.call(memory, "recall", {"failure": {"command": "pytest tests/unit", "log": LOG,
                                                          "project": "proj-a"}})
        flags = {"confirmed": True, "verified": True} if got["action"] == "ask" else {"verified": True}
        service.call(memory, "feedback", {"recall_id": got["recall_id"], **flags})
    return ids


@pytest.fixture()
def store(tmp_path):
    path = tmp_path / "memory.db"
    return path, build_store(path)


@pytest.fixture()
def client(store):
    opened = open_store(str(store[0]), encoder="hashing")
    try:
        with TestClient(build_app(opened, form_token="t0ken"), raise_server_exceptions=False) as c:
            yield c
    finally:
        opened.close()


def _files(path: Path) -> dict[str, str]:
    """Each file of the store (and its side files, the audit log) by content hash."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.iterdir())
            if p.name.startswith(path.name) and p.is_file()}


def _ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="memory-(\d+)"', page)]


# -- HTTP, in-process ------------------------------------------------------------------------------

def test_the_list_shows_every_memory_newest_first_with_its_flags(client, store):
    _, ids = store
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert _ids(r.text) == sorted(ids.values(), reverse=True)
    assert "4 memories in 2 projects" in r.text
    row = r.text.split(f'<tr id="memory-{ids["curl"]}"')[1].split("</tr>")[0]
    assert "unverified" in row and "risky command" in row and "proj-b" in row
    assert "script-src" not in r.headers["content-security-policy"] and "default-src 'none'" in r.headers[
        "content-security-policy"]


def test_filters_narrow_the_list(client, store):
    _, ids = store
    assert _ids(client.get("/", params={"namespace": "proj-a"}).text) == [ids["xss"], ids["pip"]]
    assert _ids(client.get("/", params={"verified": "no"}).text) == [ids["xss"], ids["curl"]]
    assert _ids(client.get("/", params={"verified": "yes", "namespace": "proj-b"}).text) == [ids["npm"]]
    assert _ids(client.get("/", params={"cause": "module_not_found"}).text) == [ids["pip"]]
    assert _ids(client.get("/", params={"q": "NPM CI"}).text) == [ids["npm"]]         # the fix, any case
    assert _ids(client.get("/", params={"q": "repair make"}).text) == [ids["xss"]]    # the task
    assert _ids(client.get("/", params={"q": "sudo"}).text) == [ids["curl"]]
    empty = client.get("/", params={"q": "nothing like this"})
    assert empty.status_code == 200 and 'id="empty"' in empty.text


def test_since_narrows_the_list_as_memory_list_since_does(client, store):
    path, ids = store
    with Memory.open(path, encoder="hashing", policy=None, read_only=True) as memory:
        first = {m["memory_id"]: m["first_seen"] for m in service.call(memory, "list", {})["memories"]}
        for since in sorted(set(first.values()) | {max(first.values()) + 1}):
            expected = [m["memory_id"] for m in service.call(memory, "list", {"since": since})["memories"]]
            assert _ids(client.get("/", params={"since": since}).text) == expected
            assert expected == sorted((i for i, at in first.items() if at >= since), reverse=True)
    later = first[ids["curl"]]
    narrowed = client.get("/", params={"since": later, "namespace": "proj-a", "q": "make"}).text
    assert _ids(narrowed) == [ids["xss"]] and 'name="since" min="0" value="%d"' % later in narrowed
    assert 'id="empty"' in client.get("/", params={"since": max(first.values()) + 1}).text


def test_pages_follow_next_before(client, store):
    _, ids = store
    newest = sorted(ids.values(), reverse=True)
    first = client.get("/", params={"limit": 20}).text
    assert 'id="older"' not in first
    page = client.get("/", params={"limit": 50, "before": newest[1]}).text
    assert _ids(page) == newest[2:]
    one = client.get("/?limit=20&before=" + str(newest[0]))
    assert _ids(one.text) == newest[1:]


def test_search_pages_too(client, store):
    _, ids = store
    page = client.get("/", params={"q": "proj", "limit": 20}).text     # every memory names its project
    assert _ids(page) == sorted(ids.values(), reverse=True)


@pytest.mark.parametrize("query, named", [
    ({"verified": "maybe"}, "verified must be yes, no or empty"),
    ({"limit": "500"}, "limit must be an integer from 1 to 200"),
    ({"limit": "ten"}, "limit must be an integer"),
    ({"before": "-3"}, "before must be an integer"),
    ({"since": "yesterday"}, "since (a stream position, as memory list --since) must be an integer from 0"),
    ({"since": "-1"}, "since (a stream position"),
    ({"namespace": "tab\there"}, "namespace"),
    ({"q": "x" * 201}, "at most 200 characters"),
])
def test_bad_filters_are_a_400_naming_what_was_wrong(client, query, named):
    r = client.get("/", params=query)
    assert r.status_code == 400 and named in r.text and "Traceback" not in r.text
    j = client.get("/", params=query, headers={"accept": "application/json"})
    assert j.status_code == 400 and named in j.json()["error"]


def test_one_memory_shows_its_fix_provenance_counters_and_history(client, store):
    _, ids = store
    r = client.get(f"/memory/{ids['pip']}")
    assert r.status_code == 200
    text = r.text
    assert "pip install requests &amp;&amp; pytest tests/" in text and 'id="provenance"' in text
    assert "proj-a" in text and "module cannot be imported" in text
    shown = re.search(r'<table id="counters">.*?<tr><td class="n">(\d+)</td><td class="n">(\d+)</td>'
                      r'<td class="n">(\d+)</td>', text, re.S)
    assert shown and int(shown.group(1)) >= 1 and int(shown.group(3)) >= 1       # shown once, verified once
    assert 'id="warning"' not in text and 'id="unverified"' not in text
    risky = client.get(f"/memory/{ids['curl']}").text
    assert 'id="warning"' in risky and "pipes a download into a shell" in risky and 'id="unverified"' in risky


def test_one_memory_lists_the_decisions_that_showed_it_and_the_answer(client, store):
    path, ids = store
    text = client.get(f"/memory/{ids['pip']}").text
    table = re.search(r'<table id="decisions">.*?</table>', text, re.S)
    assert table, text
    from repairmem.gate.audit import AuditLog
    with AuditLog(f"{path}.audit.db", create=False) as log:
        shown = [d for d in log.decisions() if ids["pip"] in (d["payload_ids"] or ()) or d["lead_id"] == ids["pip"]]
    assert shown and all(d["decision_id"] in table.group(0) for d in shown)
    assert "verified" in table.group(0) and "proj-a" in table.group(0)
    never = client.get(f"/memory/{ids['npm']}").text        # another project's memory no recall showed
    assert 'id="decisions"' in never and "No recall has shown it yet." in never


def test_unknown_or_malformed_ids_are_4xx_pages(client):
    r = client.get("/memory/999")
    assert r.status_code == 404 and "no memory #999" in r.text and "Traceback" not in r.text
    assert client.get("/memory/999", headers={"accept": "application/json"}).json()["status"] == 404
    bad = client.get("/memory/abc")
    assert bad.status_code == 400 and "memory id" in bad.text
    assert client.get("/memory/0").status_code == 400
    assert client.get("/no/such/page").status_code == 404
    assert client.post("/").status_code == 405


def test_stored_markup_renders_inert(client, store):
    _, ids = store
    for page in (client.get("/").text, client.get(f"/memory/{ids['xss']}").text,
                 client.get(f"/memory/{ids['xss']}/forget").text, client.get(f"/memory/{ids['xss']}/correct").text,
                 client.get(f"/memory/{ids['xss']}/trust").text,
                 client.get("/", params={"q": "<script>"}).text):
        assert "<script" not in page and "<img" not in page and "make <b>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in client.get(f"/memory/{ids['xss']}").text


def test_forget_goes_through_a_confirmation_and_the_form_token(client, store):
    path, ids = store
    before = _files(path)
    confirm = client.get(f"/memory/{ids['curl']}/forget")
    assert confirm.status_code == 200 and 'name="form_token" value="t0ken"' in confirm.text
    assert _files(path) == before                                              # the confirmation wrote nothing
    form = {"reason": "pipes a script into sudo"}
    assert client.post(f"/memory/{ids['curl']}/forget", data=form).status_code == 403     # no token
    assert client.post(f"/memory/{ids['curl']}/forget", data={**form, "form_token": "guess"}).status_code == 403
    assert client.get(f"/memory/{ids['curl']}").status_code == 200 and _files(path) == before
    done = client.post(f"/memory/{ids['curl']}/forget", data={**form, "form_token": "t0ken"}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/?forgotten={ids['curl']}"
    listed = client.get(done.headers["location"]).text
    assert ids["curl"] not in _ids(listed) and f"Memory #{ids['curl']} was forgotten" in listed
    gone = client.get(f"/memory/{ids['curl']}")
    assert gone.status_code == 410 and "pipes a script into sudo" in gone.text and ">ui<" in gone.text
    with Memory.open(path, encoder="hashing", policy=None, read_only=True) as memory:
        assert ids["curl"] not in [m["memory_id"] for m in service.call(memory, "list", {})["memories"]]


def _fix_seen(page: str) -> str:
    return re.search(r'name="fix_seen" value="(\w+)"', page).group(1)


def test_trust_goes_through_a_confirmation_and_the_form_token(client, store):
    path, ids = store
    page = client.get(f"/memory/{ids['curl']}").text
    assert "no person vouched for it" in page and 'id="trust-it"' in page
    before = _files(path)
    confirm = client.get(f"/memory/{ids['curl']}/trust")
    assert confirm.status_code == 200 and 'name="form_token" value="t0ken"' in confirm.text
    assert 'id="warning"' in confirm.text and "pipes a download into a shell" in confirm.text     # kept in view
    assert 'id="unverified"' in confirm.text and 'id="confirm-trust"' in confirm.text
    assert _files(path) == before
    form = {"fix_seen": _fix_seen(confirm.text), "actor": "alice", "reason": "read the script"}
    assert client.post(f"/memory/{ids['curl']}/trust", data=form).status_code == 403              # no token
    assert client.post(f"/memory/{ids['curl']}/trust", data={**form, "form_token": "guess"}).status_code == 403
    stale = client.post(f"/memory/{ids['curl']}/trust", data={**form, "form_token": "t0ken", "fix_seen": "0" * 16})
    assert stale.status_code == 409 and "not the one the confirmation showed" in stale.text
    assert _files(path) == before
    done = client.post(f"/memory/{ids['curl']}/trust", data={**form, "form_token": "t0ken"}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/memory/{ids['curl']}?trusted=1"
    shown = client.get(done.headers["location"]).text
    trust = re.search(r'<dd id="trust">(.*?)</dd>', shown).group(1)
    assert "You vouched for it" in shown and "alice" in trust and "read the script" in trust
    assert 'id="trust-it"' not in shown                                    # trusted: no button
    again = client.get(f"/memory/{ids['curl']}/trust")
    assert again.status_code == 409 and "already trusted (by alice" in again.text
    assert client.post(f"/memory/{ids['curl']}/trust", data={**form, "form_token": "t0ken"}).status_code == 409
    with Memory.open(path, encoder="hashing", policy=None, read_only=True) as memory:   # the CLI's verb wrote it
        rows = [r for r in service.call(memory, "history", {"memory_id": ids["curl"]})["history"]
                if r["action"] == "trust"]
    assert [(r["actor"], r["reason"]) for r in rows] == [("alice", "read the script")]


def test_trust_names_the_login_by_default_and_a_correction_ends_it(client, store, monkeypatch):
    path, ids = store
    monkeypatch.setattr("repairmem.service.getpass.getuser", lambda: "bob")
    confirm = client.get(f"/memory/{ids['npm']}/trust").text
    assert 'id="actor" value="bob"' in confirm
    done = client.post(f"/memory/{ids['npm']}/trust", data={"form_token": "t0ken", "fix_seen": _fix_seen(confirm)})
    assert done.status_code == 200 and "vouched for by <b>bob</b>" in done.text        # the redirect followed
    client.post(f"/memory/{ids['npm']}/correct", data={"form_token": "t0ken", "step": "apply", "fix": "npm i && npm t"})
    page = client.get(f"/memory/{ids['npm']}").text
    assert "no person vouched for it" in page and 'id="trust-it"' in page


def test_trust_of_a_missing_or_forgotten_memory_is_refused(client, store):
    _, ids = store
    for r in (client.get("/memory/999/trust"), client.post("/memory/999/trust", data={"form_token": "t0ken"})):
        assert r.status_code == 404 and "no memory #999" in r.text
    client.post(f"/memory/{ids['xss']}/forget", data={"form_token": "t0ken"})
    assert client.get(f"/memory/{ids['xss']}/trust").status_code == 410
    assert client.get("/memory/abc/trust").status_code == 400


def test_correct_reviews_then_applies(client, store):
    path, ids = store
    before = _files(path)
    page = client.get(f"/memory/{ids['curl']}/correct")
    assert page.status_code == 200 and CURL.replace("|", "|") in page.text.replace("&amp;", "&")
    review = client.post(f"/memory/{ids['curl']}/correct", data={"form_token": "t0ken", "step": "review",
                                                                 "fix": "chmod +x install.sh && ./install.sh",
                                                                 "reason": "no sudo"})
    assert review.status_code == 200 and 'id="confirm-correct"' in review.text and _files(path) == before
    blank = client.post(f"/memory/{ids['curl']}/correct", data={"form_token": "t0ken", "step": "apply", "fix": " "})
    assert blank.status_code == 400 and "must not be blank" in blank.text
    assert client.post(f"/memory/{ids['curl']}/correct", data={"step": "apply", "fix": "x"}).status_code == 403
    done = client.post(f"/memory/{ids['curl']}/correct", follow_redirects=False,
                       data={"form_token": "t0ken", "step": "apply", "fix": "chmod +x install.sh && ./install.sh",
                             "reason": "no sudo"})
    assert done.status_code == 303
    shown = client.get(done.headers["location"]).text
    assert "The fix was corrected" in shown and "chmod +x install.sh &amp;&amp; ./install.sh" in shown
    history = shown.split('id="history"')[1]
    assert "correct" in history and "no sudo" in history and "sudo bash" in history     # the original kept


def test_a_form_that_is_not_urlencoded_is_refused(client, store):
    _, ids = store
    r = client.post(f"/memory/{ids['pip']}/forget", json={"form_token": "t0ken"})
    assert r.status_code == 400 and "x-www-form-urlencoded" in r.text
    assert client.get(f"/memory/{ids['pip']}").status_code == 200


def test_no_get_writes_anything(client, store):
    path, ids = store
    client.get("/")                    # the first answers may settle what opening left
    before = _files(path)
    for address in ("/", "/picture", "/?verified=no", "/?q=pip", "/?since=1", "/?since=bad", f"/memory/{ids['pip']}",
                    f"/memory/{ids['pip']}/forget", f"/memory/{ids['pip']}/correct", "/memory/999",
                    f"/memory/{ids['pip']}/forget?form_token=t0ken&reason=x", f"/memory/{ids['curl']}/trust",
                    f"/memory/{ids['curl']}/trust?form_token=t0ken&actor=mallory", "/memory/999/trust",
                    f"/memory/{ids['pip']}?trusted=1"):
        assert client.get(address).status_code in (200, 400, 404)
    assert _files(path) == before
    assert "no person vouched for it" in client.get(f"/memory/{ids['curl']}").text


def test_what_another_process_records_meanwhile_is_listed(client, store):
    """An agent's MCP server writes the same store while the page is open: the next GET shows it."""
    path, ids = store
    assert client.get("/").status_code == 200
    with Memory.open(path, encoder="hashing", policy=None) as agent:
        new = _record(agent, "proj-c", "cargo build", "error[E0432]: unresolved import `serde`",
                      "cargo add serde && cargo build", verified=True)
    page = client.get("/").text
    assert _ids(page)[0] == new and "proj-c" in page
    assert client.get(f"/memory/{new}").status_code == 200


def test_only_the_command_line_imports_the_page():
    from tests.unit.test_layout import _graph, _layer
    importers = {m for m, edges in _graph().items() if _layer(m) != "ui" and any(_layer(t) == "ui" for t in edges)}
    assert importers == {"repairmem.cli"}


def test_the_picture_shows_projects_causes_and_the_gates_decisions(client):
    r = client.get("/picture")
    assert r.status_code == 200
    assert 'id="projects"' in r.text and "proj-a" in r.text and "proj-b" in r.text
    assert 'id="causes"' in r.text and "module_not_found" in r.text
    assert 'id="mix"' in r.text and "1 decisions" in r.text and 'class="bar"' in r.text


def test_the_picture_without_an_audit_log_says_so(tmp_path):
    path = tmp_path / "plain.db"
    with Memory.open(path, encoder="hashing", policy=None) as memory:
        _record(memory, "p", "make", "make: *** No rule to make target 'all'", "make -C src", verified=True)
    opened = open_store(str(path), encoder="hashing")
    try:
        with TestClient(build_app(opened)) as c:
            assert 'id="no-audit"' in c.get("/picture").text
            assert "No audit log beside this store" in c.get("/memory/1").text
    finally:
        opened.close()


def test_the_token_is_required_when_set(store):
    path, ids = store
    opened = open_store(str(path), encoder="hashing")
    try:
        with TestClient(build_app(opened, token="s3cret")) as c:
            assert c.get("/").status_code == 401 and "Bearer" in c.get("/").text
            assert c.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
            assert c.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
            assert c.get("/?token=wrong").status_code == 401
            once = c.get(f"/memory/{ids['pip']}?token=s3cret&x=1", follow_redirects=False)
            assert once.status_code == 303 and once.headers["location"] == f"/memory/{ids['pip']}?x=1"
            assert "HttpOnly" in once.headers["set-cookie"] and "s3cret" not in once.headers["set-cookie"]
            assert c.get("/").status_code == 200                      # the cookie carries it now
            c.cookies.clear()
            c.cookies.set(COOKIE, session_value("other"))
            assert c.get("/").status_code == 401
    finally:
        opened.close()


def test_a_loopback_server_answers_only_loopback_host_names(store):
    opened = open_store(str(store[0]), encoder="hashing")
    try:
        app = build_app(opened, hosts={"127.0.0.1", "localhost", "::1"})
        with TestClient(app, base_url="http://127.0.0.1:8765") as c:
            assert c.get("/").status_code == 200
            assert c.get("/", headers={"host": "localhost:8765"}).status_code == 200
            assert c.get("/", headers={"host": "[::1]:8765"}).status_code == 200
            assert c.get("/", headers={"host": "evil.example:8765"}).status_code == 403
    finally:
        opened.close()


# -- the command -------------------------------------------------------------------------------------

def test_the_command_refuses_a_missing_store_and_an_open_host_without_a_token(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "no" / "memory.db"
    assert main(["ui", "--store", str(missing), "--encoder", "hashing"]) == 2
    assert "no repairmem store here" in capsys.readouterr().err and not missing.parent.exists()
    monkeypatch.delenv("REPAIRMEM_MCP_TOKEN", raising=False)
    path = tmp_path / "m.db"
    build_store(path)
    assert main(["ui", "--store", str(path), "--host", "0.0.0.0", "--encoder", "hashing"]) == 2
    assert "REPAIRMEM_MCP_TOKEN" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(store: Path, port: int, *, env: dict | None = None) -> subprocess.Popen:
    """``repairmem ui`` on ``port``, answering once its page does (the process is the caller's to stop)."""
    proc = subprocess.Popen([sys.executable, "-m", "repairmem", "ui", "--store", str(store), "--port", str(port),
                             "--encoder", "hashing"], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"repairmem ui exited {proc.returncode}: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("repairmem ui did not answer within 60 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- a real browser ----------------------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def chrome(user_data: str, *, size: str = "1200,800"):
    """Headless Debian chromium through its own chromedriver (selenium-manager never runs)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed: pip install selenium (the test extra)")
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.skip("no chromium/chromedriver at /usr/bin: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={size}", f"--user-data-dir={user_data}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


class Browser:
    """A headless chromium on a real ``repairmem ui`` over ``build_store``'s store (``ids`` its memories)."""

    def __init__(self, driver, base: str, ids: dict[str, int], path: Path) -> None:
        from selenium.webdriver.common.by import By
        self.driver, self.base, self.ids, self.path, self.By = driver, base, ids, path, By

    def at(self, address: str) -> None:         # a click returns before the next page has loaded
        from selenium.webdriver.support import expected_conditions as arrived
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(self.driver, 15).until(arrived.url_to_be(self.base + address))

    def find(self, element_id: str):
        return self.driver.find_element(self.By.ID, element_id)

    def listed(self) -> list[int]:
        rows = self.driver.find_elements(self.By.CSS_SELECTOR, "#memories tbody tr")
        return [int(e.get_attribute("id").removeprefix("memory-")) for e in rows]


@pytest.fixture()
def browser(tmp_path):
    path = tmp_path / "memory.db"
    ids = build_store(path)
    profile = tempfile.mkdtemp(prefix="repairmem-chromium-")
    driver = proc = None
    try:
        driver = chrome(profile)
        port = _free_port()
        proc = start_server(path, port)
        yield Browser(driver, f"http://127.0.0.1:{port}", ids, path)
    finally:
        if driver is not None:
            driver.quit()
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(profile, ignore_errors=True)


def test_a_browser_filters_the_list_and_reads_a_memory_its_decisions_and_the_picture(browser):
    from selenium.webdriver.support.ui import Select
    b, ids = browser, browser.ids
    with Memory.open(b.path, encoder="hashing", policy=None, read_only=True) as memory:
        since = service.call(memory, "show", {"memory_id": ids["xss"]})["first_seen"]
    b.driver.get(b.base + "/")
    assert b.listed() == sorted(ids.values(), reverse=True)
    Select(b.driver.find_element(b.By.NAME, "namespace")).select_by_value("proj-a")
    b.driver.find_element(b.By.CSS_SELECTOR, "#filters button[type=submit]").click()
    b.at("/?namespace=proj-a&cause=&verified=&since=&q=&limit=20")
    assert b.listed() == [ids["xss"], ids["pip"]]
    b.find("since").send_keys(str(since))
    b.driver.find_element(b.By.CSS_SELECTOR, "#filters button[type=submit]").click()
    b.at(f"/?namespace=proj-a&cause=&verified=&since={since}&q=&limit=20")
    assert b.listed() == [ids["xss"]]
    b.driver.get(b.base + "/?namespace=proj-a")
    b.driver.find_element(b.By.LINK_TEXT, f"#{ids['pip']}").click()
    b.at(f"/memory/{ids['pip']}")
    assert b.find("fix").text == "pip install requests && pytest tests/"
    decisions = b.driver.find_elements(b.By.CSS_SELECTOR, "table#decisions tbody tr")    # why it was shown
    assert decisions and "proj-a" in decisions[0].text and "verified" in decisions[0].text
    assert "no person vouched for it" in b.find("trust").text
    b.find("nav-picture").click()
    b.at("/picture")
    assert "proj-a" in b.find("projects").text and b.find("action-mix").is_displayed()
    assert not b.driver.find_elements(b.By.TAG_NAME, "script")


def test_a_browser_trusts_another_projects_memory_after_its_confirmation(browser):
    b, ids = browser, browser.ids
    b.driver.get(b.base + "/")
    b.driver.find_element(b.By.LINK_TEXT, f"#{ids['curl']}").click()
    b.at(f"/memory/{ids['curl']}")
    b.find("trust-it").click()
    b.at(f"/memory/{ids['curl']}/trust")
    assert b.find("warning").is_displayed() and "pipes a download into a shell" in b.find("warning").text
    assert b.find("unverified").is_displayed()
    b.find("actor").clear()
    b.find("actor").send_keys("carol")
    b.find("reason").send_keys("read the script, it is ours")
    b.find("confirm-trust").click()
    b.at(f"/memory/{ids['curl']}?trusted=1")
    assert "You vouched for it" in b.find("banner").text
    assert "vouched for by carol" in b.find("trust").text and "it is ours" in b.find("trust").text
    assert not b.driver.find_elements(b.By.ID, "trust-it")                # trusted: no button any more
    assert "carol" in b.find("history").text and "trust" in b.find("history").text


def test_a_browser_clicks_from_the_list_to_a_memory_and_forgets_it(browser):
    b, ids = browser, browser.ids
    b.driver.get(b.base + "/")
    assert "risky command" in b.find(f"memory-{ids['curl']}").text
    b.driver.find_element(b.By.LINK_TEXT, f"#{ids['curl']}").click()
    b.at(f"/memory/{ids['curl']}")
    assert "pipes a download into a shell" in b.find("warning").text
    assert b.find("fix").text == CURL
    b.find("forget").click()
    b.at(f"/memory/{ids['curl']}/forget")
    b.find("reason").send_keys("pipes a script into sudo")
    b.find("confirm-forget").click()
    b.at(f"/?forgotten={ids['curl']}")
    assert f"Memory #{ids['curl']} was forgotten" in b.find("banner").text
    assert ids["curl"] not in b.listed() and ids["pip"] in b.listed()
    # the markup memory is shown as text in a real browser too: no alert, the text on the page
    b.driver.get(f"{b.base}/memory/{ids['xss']}")
    assert b.find("fix").text == XSS
    assert not b.driver.find_elements(b.By.TAG_NAME, "script")

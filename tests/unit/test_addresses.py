"""``addresses``: which addresses name PostgreSQL, what libpq is handed, and ``redact`` on every form of
password (issue 31, item 1). Each leak on its road: ``test_password_leaks.py`` (with a live server:
``tests/integration/test_addresses_postgres.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repairmem.addresses import is_postgres_address, postgres_address, redact


@pytest.mark.parametrize("address, postgres", [
    ("postgresql://u@h/db", True), ("postgres://h", True), ("POSTGRESQL://u:p@h/db", True), ("PostGres://h", True),
    ("host=h password=p dbname=mem", True), ("  dbname = mem", True), ("user=me", True),
    ("memory.db", False), (":memory:", False), ("./host=x.db", False), ("/tmp/a=b/memory.db", False),
    ("hostname=x", False), ("mysql://u:p@h/db", False), (Path("host=h"), False),
])
def test_which_addresses_name_postgres(address, postgres):
    assert is_postgres_address(address) is postgres


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

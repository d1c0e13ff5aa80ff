"""tallyq's test setup: the ledger tests read fixtures generated into build/ by tools/make_fixtures.py."""
import json
import os
from pathlib import Path

import pytest


def pytest_configure(config):
    if not os.environ.get("TALLYQ_FIXTURES"):
        raise pytest.UsageError("tallyq: TALLYQ_FIXTURES is not set; the tests need generated fixtures: "
                                "run them with ./dev test")


@pytest.fixture
def ledger():
    return json.loads((Path(os.environ["TALLYQ_FIXTURES"]) / "ledger.json").read_text())

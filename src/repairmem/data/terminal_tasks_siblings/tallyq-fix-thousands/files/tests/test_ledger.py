from tallyq.ledger import balance_by_account, total


def test_balances(ledger):
    assert balance_by_account(ledger["entries"]) == ledger["balances"]


def test_total(ledger):
    assert total(ledger["entries"]) == ledger["total"]

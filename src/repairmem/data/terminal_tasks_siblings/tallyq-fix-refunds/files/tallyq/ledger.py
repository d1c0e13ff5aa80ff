"""Balances of a ledger: a list of {"account", "kind": "sale" | "refund", "amount"} entries."""
from .money import parse_amount


def balance_by_account(entries):
    """account -> cents: sales add, refunds subtract."""
    out = {}
    for entry in entries:
        cents = parse_amount(entry["amount"])
        if entry["kind"] == "refunded":
            cents = -cents
        out[entry["account"]] = out.get(entry["account"], 0) + cents
    return out


def total(entries):
    return sum(balance_by_account(entries).values())

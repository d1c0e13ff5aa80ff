"""tallyq: ledger arithmetic in integer cents."""

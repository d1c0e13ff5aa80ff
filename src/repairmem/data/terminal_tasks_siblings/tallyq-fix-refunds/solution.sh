sed -i 's/== "refunded":/== "refund":/' tallyq/ledger.py
./dev test

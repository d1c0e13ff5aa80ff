sed -i 's|return cents - cents \* percent // 100|return cents - (cents * percent + 50) // 100|' tallyq/money.py
./dev test

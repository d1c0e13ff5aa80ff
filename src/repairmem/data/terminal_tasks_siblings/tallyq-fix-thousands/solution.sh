sed -i 's/text = text.strip()$/text = text.strip().replace(",", "")/' tallyq/money.py
./dev test

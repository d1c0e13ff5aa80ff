set -e
# base
sed -i 's/^CURRENCY = "EUR"$/CURRENCY = "CHF"/' invoicer/rates.py
# fact
./dev regen

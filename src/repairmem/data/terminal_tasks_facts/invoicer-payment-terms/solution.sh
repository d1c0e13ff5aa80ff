set -e
# base
sed -i 's/^PAYMENT_TERMS_DAYS = 30$/PAYMENT_TERMS_DAYS = 14/' invoicer/rates.py
# fact
./dev regen

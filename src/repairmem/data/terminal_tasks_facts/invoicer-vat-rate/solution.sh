set -e
# base
sed -i 's/^VAT_RATE = 0.19$/VAT_RATE = 0.2/' invoicer/rates.py
# fact
./dev regen

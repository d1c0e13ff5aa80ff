set -e
# base
sed -i 's/^LATE_FEE = 15.00$/LATE_FEE = 25.00/' invoicer/rates.py
# fact
./dev regen

set -e
# base
sed -i 's/^DECIMALS = 1$/DECIMALS = 3/' geokit/settings.py
# fact
echo 1.4.3 > VERSION

set -e
# base
sed -i 's/^DEFAULT_UNIT = "km"$/DEFAULT_UNIT = "mi"/' geokit/settings.py
# fact
echo 1.4.3 > VERSION

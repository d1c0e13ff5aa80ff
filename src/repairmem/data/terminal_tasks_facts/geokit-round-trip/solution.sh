set -e
# base
sed -i 's/^ROUND_TRIP = False$/ROUND_TRIP = True/' geokit/settings.py
# fact
echo 1.4.3 > VERSION

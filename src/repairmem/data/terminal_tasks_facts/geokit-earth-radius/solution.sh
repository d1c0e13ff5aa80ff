set -e
# base
sed -i 's/^EARTH_RADIUS_KM = 6371.0$/EARTH_RADIUS_KM = 6378.137/' geokit/settings.py
# fact
echo 1.4.3 > VERSION

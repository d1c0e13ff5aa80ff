set -e
# base
sed -i 's/^DEFAULT_STATION = "brest"$/DEFAULT_STATION = "cherbourg"/' tidewatch/stations.py
# fact
sed -i 's/^## Unreleased$/## Unreleased\n\n- stations: default to cherbourg/' CHANGES.md

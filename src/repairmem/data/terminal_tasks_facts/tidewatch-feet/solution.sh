set -e
# base
sed -i 's/^DEFAULT_UNIT = "m"$/DEFAULT_UNIT = "ft"/' tidewatch/units.py
# fact
sed -i 's/^## Unreleased$/## Unreleased\n\n- units: print heights in feet by default/' CHANGES.md

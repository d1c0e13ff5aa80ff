set -e
# base
sed -i 's/^HIGH_WATER_MARK = 5.5$/HIGH_WATER_MARK = 5.7/' tidewatch/report.py
# fact
sed -i 's/^## Unreleased$/## Unreleased\n\n- report: flag high waters from 5.7 m/' CHANGES.md

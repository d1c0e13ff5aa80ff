set -e
# base
sed -i 's/^DECIMALS = 2$/DECIMALS = 1/' tidewatch/report.py
# fact
sed -i 's/^## Unreleased$/## Unreleased\n\n- report: print heights with one decimal/' CHANGES.md

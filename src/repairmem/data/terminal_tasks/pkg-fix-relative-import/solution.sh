set -e
sed -i 's/^from helpers import fmt_sum$/from .helpers import fmt_sum/' tool/cli.py

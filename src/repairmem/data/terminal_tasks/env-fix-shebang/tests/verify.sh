set -eu
test -x bin/report || { echo "bin/report is not executable"; exit 1; }
head -1 bin/report | grep -Eq '^#! ?(/usr/bin/env python3|/usr/bin/python3)$' || { echo "bad shebang: $(head -1 bin/report)"; exit 1; }
test "$(tail -n +2 bin/report)" = "$(printf 'import sys\n\nprint("report ok")\nsys.exit(0)')" || { echo "script body changed"; exit 1; }
test "$(./bin/report)" = "report ok"
echo ok

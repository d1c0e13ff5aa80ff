#!/usr/bin/env bash
# The facts suite's verifier, the same file in every task. Two checks, each reported on its own
# line at the end of the output:
#   base: the change the instruction asks for (tests/base.py), with every file under tests/orig/
#         (the project's own checks, tests and tools) left as shipped;
#   fact: the project's recurring house fact (tests/fact.py, the same in every task of a project).
# Exit status 0 only when both pass.
set -u
changed=""
while IFS= read -r f; do
    cmp -s "$f" "$TESTS_DIR/orig/$f" || changed="$changed $f"
done < <(cd "$TESTS_DIR/orig" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
base=$(python3 "$TESTS_DIR/base.py" 2>&1); base_rc=$?
if [ -n "$changed" ]; then
    base="${base:+$base
}changed or removed, must stay as shipped:$changed"
    base_rc=1
fi
fact=$(python3 "$TESTS_DIR/fact.py" 2>&1); fact_rc=$?
[ "$base_rc" = 0 ] || printf '%s\n' "$base"
[ "$fact_rc" = 0 ] || printf '%s\n' "$fact"
line() {
    if [ "$2" = 0 ]; then echo "$1: ok"; else echo "$1: FAIL $(printf '%s\n' "$3" | tail -n 1)"; fi
}
line base "$base_rc" "$base"
line fact "$fact_rc" "$fact"
[ "$base_rc" = 0 ] && [ "$fact_rc" = 0 ]

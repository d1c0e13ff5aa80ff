set -eu
expected=$(printf 'ann.lee@example.com\nbob_smith@mail.example.org\ncarol+news@example.co.uk\ndave@example.com\nops-team@example.net')
test "$(cat emails.txt)" = "$expected" || { echo "wrong content:"; cat emails.txt; exit 1; }
echo ok

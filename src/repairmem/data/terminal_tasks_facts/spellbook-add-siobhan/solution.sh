set -e
# base
echo siobhan >> words/names.txt
# fact
LC_ALL=C sort -u -o words/names.txt words/names.txt

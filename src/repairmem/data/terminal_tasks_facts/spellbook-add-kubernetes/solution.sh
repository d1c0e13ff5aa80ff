set -e
# base
echo kubernetes >> words/tech.txt
# fact
LC_ALL=C sort -u -o words/tech.txt words/tech.txt

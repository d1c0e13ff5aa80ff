set -e
# base
echo oaxaca >> words/places.txt
# fact
LC_ALL=C sort -u -o words/places.txt words/places.txt

set -e
# base
echo tahini >> words/food.txt
# fact
LC_ALL=C sort -u -o words/food.txt words/food.txt

set -e
# base
mv recipes/flapjack.txt recipes/pancakes.txt
# fact
sed -i 's/^flapjack$/pancakes/' recipes/INDEX

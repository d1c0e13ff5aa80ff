set -e
# base
rm recipes/gruel.txt
# fact
sed -i '/^gruel$/d' recipes/INDEX

set -e
# base
printf '250 ml water\n2 g tea\n' > recipes/tea.txt
# fact
echo tea >> recipes/INDEX

set -e
# base
printf '1 slice bread\n10 g butter\n' > recipes/toast.txt
# fact
echo toast >> recipes/INDEX

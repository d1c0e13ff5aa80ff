awk '{print $NF, $7}' access.log | sort -k1,1gr | head -3 | awk '{print $2}' > slowest.txt

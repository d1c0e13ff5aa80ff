awk '$3 == "ERROR" {n[$4]++} END {for (c in n) print c, n[c]}' app.log | sort -k2,2nr -k1,1 > error_counts.txt

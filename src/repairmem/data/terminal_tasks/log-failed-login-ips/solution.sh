grep 'Failed password' auth.log | sed -E 's/.* from ([0-9.]+) port.*/\1/' | sort | uniq -c | awk '$1 >= 3 {print $2}' | sort > blocklist.txt

set -e
sed -i 's/^port = 8080$/port = 9090/' etc/relayd.toml
./relayd seal
./relayd --check

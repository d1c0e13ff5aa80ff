set -e
sed -i 's/^max_clients = 16$/max_clients = 64/' etc/relayd.toml
./relayd seal
./relayd --check

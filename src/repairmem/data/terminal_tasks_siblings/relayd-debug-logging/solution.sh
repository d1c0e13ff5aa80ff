set -e
sed -i 's/^level = "info"$/level = "debug"/' etc/relayd.toml
./relayd seal
./relayd --check

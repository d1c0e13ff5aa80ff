set -e
sed -i '$a backup = "10.0.0.7:7000"' etc/relayd.toml
./relayd seal
./relayd --check

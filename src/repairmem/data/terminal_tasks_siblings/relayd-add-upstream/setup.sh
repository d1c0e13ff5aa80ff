chmod +x relayd

set -e
chmod +x dev
python3 tools/regen.py > /dev/null

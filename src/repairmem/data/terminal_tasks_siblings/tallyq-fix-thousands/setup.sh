chmod +x dev

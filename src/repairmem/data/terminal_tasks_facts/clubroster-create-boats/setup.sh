chmod +x manage

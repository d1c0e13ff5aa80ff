sed -i 's/^\[sever\]$/[server]/' config/app.ini

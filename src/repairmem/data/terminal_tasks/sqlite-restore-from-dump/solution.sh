set -e
rm -f app.db
sqlite3 app.db < backup.sql

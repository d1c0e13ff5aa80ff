set -e
# base
echo 'CREATE TABLE boats (id INTEGER PRIMARY KEY, name TEXT NOT NULL);' > create_boats.sql
# fact
mv create_boats.sql db/migrations/0004_create_boats.sql

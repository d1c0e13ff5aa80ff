set -e
# base
echo 'ALTER TABLE members ADD COLUMN phone TEXT;' > add_phone.sql
# fact
mv add_phone.sql db/migrations/0004_add_phone.sql

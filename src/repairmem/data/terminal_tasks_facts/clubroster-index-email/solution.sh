set -e
# base
echo 'CREATE UNIQUE INDEX members_email ON members(email);' > index_email.sql
# fact
mv index_email.sql db/migrations/0004_index_email.sql

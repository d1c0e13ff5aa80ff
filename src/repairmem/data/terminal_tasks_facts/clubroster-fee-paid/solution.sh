set -e
# base
echo 'ALTER TABLE fees ADD COLUMN paid INTEGER NOT NULL DEFAULT 0;' > add_fee_paid.sql
# fact
mv add_fee_paid.sql db/migrations/0004_add_fee_paid.sql

sqlite3 bank.db "ALTER TABLE accounts ADD COLUMN status TEXT NOT NULL DEFAULT 'active'; UPDATE accounts SET status = 'closed' WHERE balance = 0;"

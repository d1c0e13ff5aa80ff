sqlite3 app.db "DELETE FROM users WHERE id NOT IN (SELECT min(id) FROM users GROUP BY email); CREATE UNIQUE INDEX idx_users_email ON users(email);"

sed -i 's/^LOG_LEVEL=.*/LOG_LEVEL=info/' .env
echo 'DATABASE_URL=sqlite:///data/app.db' >> .env

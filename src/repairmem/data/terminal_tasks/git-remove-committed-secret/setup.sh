set -e
git init -q -b main repo
cd repo
printf 'def main():\n    print("app")\n' > app.py
git add -A && git commit -qm "initial"
printf 'def main():\n    print("app")\n\ndef login(user):\n    return user == "admin"\n' > app.py
printf 'API_KEY=sk-test-123456\n' > secrets.env
git add -A && git commit -qm "add login"

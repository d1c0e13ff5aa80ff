set -e
git init -q -b main repo
cd repo
mkdir notes
printf '# Plan\n1. collect data\n2. train model\n3. write report\n' > notes/plan.md
printf 'print("hello")\n' > app.py
git add -A && git commit -qm "initial"
printf '# Todo\n- review\n' > notes/todo.md
git add -A && git commit -qm "add todo"
git rm -q notes/plan.md && git commit -qm "cleanup notes"
printf 'print("hello world")\n' > app.py && git commit -qam "update app"

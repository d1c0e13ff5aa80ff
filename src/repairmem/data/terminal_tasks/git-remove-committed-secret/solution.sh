set -e
cd repo
git rm -q --cached secrets.env
echo secrets.env >> .gitignore
git add .gitignore
git commit -q --amend --no-edit

set -e
cd repo
deleted_in=$(git rev-list -n 1 HEAD -- notes/plan.md)
git checkout "$deleted_in~1" -- notes/plan.md
git commit -qm "restore notes/plan.md"

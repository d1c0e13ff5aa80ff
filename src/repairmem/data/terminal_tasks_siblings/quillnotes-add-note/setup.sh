set -e
chmod +x hooks/commit-msg
git init -q -b main
git config core.hooksPath hooks
git add -A
git commit -q -s -m "quillnotes 0.4.0"

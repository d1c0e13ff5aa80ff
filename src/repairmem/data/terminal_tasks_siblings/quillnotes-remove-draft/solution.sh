set -e
git rm -q drafts/old-idea.md
git commit -q -s -m "drafts: remove the dropped idea"

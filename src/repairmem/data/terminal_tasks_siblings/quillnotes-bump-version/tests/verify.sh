set -eu
cmp -s hooks/commit-msg "$TESTS_DIR/orig/hooks/commit-msg" || { echo "the commit-msg hook was changed"; exit 1; }
test "$(git config core.hooksPath)" = hooks || { echo "core.hooksPath was changed"; exit 1; }
test "$(git log --reverse --format=%s | head -1)" = "quillnotes 0.4.0" || { echo "history was rewritten"; exit 1; }
test "$(git rev-list --count HEAD)" -ge 2 || { echo "nothing was committed"; exit 1; }
test -z "$(git status --porcelain)" || { echo "uncommitted changes left"; git status --short; exit 1; }
for c in $(git rev-list HEAD); do
    git log -1 --format=%B "$c" | grep -q '^Signed-off-by: .* <.*>$' || { echo "commit $c is not signed off"; exit 1; }
done
test "$(git show HEAD:quill.toml)" = "$(printf '[quill]\nname = "quillnotes"\nversion = "0.5.0"\nsync = "daily"')" \
    || { echo "quill.toml is not the 0.5.0 version"; git show HEAD:quill.toml; exit 1; }
echo ok

set -eu
cmp -s hooks/commit-msg "$TESTS_DIR/orig/hooks/commit-msg" || { echo "the commit-msg hook was changed"; exit 1; }
test "$(git config core.hooksPath)" = hooks || { echo "core.hooksPath was changed"; exit 1; }
test "$(git log --reverse --format=%s | head -1)" = "quillnotes 0.4.0" || { echo "history was rewritten"; exit 1; }
test "$(git rev-list --count HEAD)" -ge 2 || { echo "nothing was committed"; exit 1; }
test -z "$(git status --porcelain)" || { echo "uncommitted changes left"; git status --short; exit 1; }
for c in $(git rev-list HEAD); do
    git log -1 --format=%B "$c" | grep -q '^Signed-off-by: .* <.*>$' || { echo "commit $c is not signed off"; exit 1; }
done
git show HEAD:notes/2024-05-02.md > "$TMPDIR/note" || { echo "the note is not committed"; exit 1; }
test "$(head -1 "$TMPDIR/note")" = "# Standup 2024-05-02" || { echo "wrong first line"; exit 1; }
grep -qx -- '- sync moved to hourly' "$TMPDIR/note" || { echo "the list item is missing"; exit 1; }
git show HEAD:notes/2024-05-01.md | grep -q 'release 0.4.0' || { echo "the earlier note was lost"; exit 1; }
echo ok

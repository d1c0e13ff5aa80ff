"""Check that every module changed since the last release has a line under '## Unreleased'."""
import re
import subprocess
import sys

tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0"], capture_output=True, text=True).stdout.strip()
changed = subprocess.run(["git", "diff", "--name-only", tag, "--", "tidewatch/"], capture_output=True,
                         text=True).stdout.split()
text = open("CHANGES.md").read()
unreleased = text.split("## Unreleased", 1)[1].split("\n## ", 1)[0] if "## Unreleased" in text else ""
missing = []
for path in changed:
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    if not re.search(rf"^- {re.escape(module)}: \S", unreleased, re.MULTILINE):
        missing.append((path, module))
for path, module in missing:
    print(f"check: {path} changed since {tag} but CHANGES.md has no entry for it: add a line "
          f"'- {module}: <what changed>' right below the '## Unreleased' heading")
sys.exit(1 if missing else 0)

"""Every change to geokit/ since the last release tag must bump the patch number in VERSION."""
import subprocess
import sys

tag = subprocess.run(["git", "describe", "--tags", "--abbrev=0"], capture_output=True, text=True).stdout.strip()
released = tag.removeprefix("v")
major, minor, patch = released.split(".")
bumped = f"{major}.{minor}.{int(patch) + 1}"
changed = subprocess.run(["git", "diff", "--name-only", tag, "--", "geokit/"], capture_output=True,
                         text=True).stdout.split()
version = open("VERSION").read().strip()
if changed and version != bumped:
    print(f"ci: geokit/ changed since {tag} ({', '.join(changed)}) but VERSION is {version}: every change to "
          f"geokit/ bumps the patch number in VERSION, here to {bumped}")
    sys.exit(1)

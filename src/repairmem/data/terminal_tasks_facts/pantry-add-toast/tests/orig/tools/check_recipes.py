"""Check that recipes/INDEX lists exactly the recipe files in recipes/."""
import sys
from pathlib import Path

listed = [line.strip() for line in Path("recipes/INDEX").read_text().splitlines() if line.strip()]
present = sorted(p.stem for p in Path("recipes").glob("*.txt"))
problems = [f"recipes/INDEX does not list recipes/{name}.txt" for name in present if name not in listed]
problems += [f"recipes/INDEX lists {name!r} but recipes/{name}.txt does not exist" for name in listed
             if name not in present]
problems += [f"recipes/INDEX lists {name!r} twice" for name in sorted(set(listed)) if listed.count(name) > 1]
for problem in problems:
    print(f"check_recipes: {problem}: every recipe file must be listed in recipes/INDEX, one name per line")
sys.exit(1 if problems else 0)

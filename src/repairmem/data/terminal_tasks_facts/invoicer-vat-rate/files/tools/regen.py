"""Write docs/rates.md from invoicer/rates.py (run from the project root; ./dev regen does).

--check: write nothing, exit 1 when docs/rates.md differs from what would be written.
"""
import runpy
import sys
from pathlib import Path

SOURCE, TARGET = Path("invoicer/rates.py"), Path("docs/rates.md")


def render():
    values = runpy.run_path(str(SOURCE))
    rows = [f"| {name} | {values[name]} |" for name in sorted(values) if name.isupper()]
    return "\n".join(["<!-- generated from invoicer/rates.py by ./dev regen; do not edit -->", "# Rates", "",
                      "| name | value |", "|---|---|", *rows, ""])


if "--check" in sys.argv[1:]:
    if not TARGET.is_file() or TARGET.read_text() != render():
        print(f"dev check: {TARGET} is out of date with {SOURCE}: it is generated from it, run ./dev regen")
        sys.exit(1)
else:
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(render())
    print(f"wrote {TARGET}")

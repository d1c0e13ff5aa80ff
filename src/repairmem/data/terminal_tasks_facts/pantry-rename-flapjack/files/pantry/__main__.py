"""python3 -m pantry list | show NAME [--servings N]"""
import argparse
import sys
from pathlib import Path

RECIPES = Path("recipes")


def scaled(name, servings):
    """The recipe's lines with every quantity multiplied by ``servings``."""
    lines = []
    for line in (RECIPES / f"{name}.txt").read_text().splitlines():
        if line.strip():
            qty, rest = line.split(" ", 1)
            lines.append(f"{float(qty) * servings:g} {rest}")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(prog="pantry")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    show = sub.add_parser("show")
    show.add_argument("name")
    show.add_argument("--servings", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "list":
        print((RECIPES / "INDEX").read_text(), end="")
    elif not (RECIPES / f"{args.name}.txt").is_file():
        print(f"pantry: no recipe {args.name!r}", file=sys.stderr)
        return 1
    else:
        print("\n".join(scaled(args.name, args.servings)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

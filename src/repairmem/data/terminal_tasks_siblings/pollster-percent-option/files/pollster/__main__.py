"""python3 -m pollster tally FILE: one `choice: votes` line per choice, most votes first."""
import argparse

from . import VERSION
from .count import read_votes, tally


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pollster", description=f"pollster {VERSION}: count votes")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("tally", help="votes per choice")
    p.add_argument("file")
    args = parser.parse_args(argv)
    if args.command == "tally":
        for choice, votes in tally(read_votes(args.file)).items():
            print(f"{choice}: {votes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

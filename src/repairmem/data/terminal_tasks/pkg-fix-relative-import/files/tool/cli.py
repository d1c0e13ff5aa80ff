import sys

from helpers import fmt_sum


def main(argv):
    a, b = (int(x) for x in argv[:2])
    print(fmt_sum(a, b))


if __name__ == "__main__":
    main(sys.argv[1:])

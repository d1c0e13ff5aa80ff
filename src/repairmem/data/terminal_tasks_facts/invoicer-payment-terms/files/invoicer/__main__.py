"""python3 -m invoicer ORDER.csv: print the invoice of one order file."""
import csv
import sys

from . import rates


def read_order(path):
    """Rows of (item, quantity, unit price) from a CSV file without a header."""
    with open(path, newline="") as fh:
        return [(item, int(qty), float(price)) for item, qty, price in csv.reader(fh) if item]


def invoice_lines(name, rows):
    """The invoice's lines: items, net, VAT, total and the payment terms."""
    cur = rates.CURRENCY
    net = round(sum(qty * price for _, qty, price in rows), 2)
    vat = round(net * rates.VAT_RATE, 2)
    lines = [f"Invoice {name}"]
    lines += [f"{item:<12} {qty:>3} x {price:>8.2f} {cur}" for item, qty, price in rows]
    lines.append(f"{'net':<20} {net:>8.2f} {cur}")
    lines.append(f"{'VAT ' + format(rates.VAT_RATE * 100, 'g') + '%':<20} {vat:>8.2f} {cur}")
    lines.append(f"{'total':<20} {net + vat:>8.2f} {cur}")
    lines.append(f"payable within {rates.PAYMENT_TERMS_DAYS} days; late fee {rates.LATE_FEE:.2f} {cur}")
    return lines


def main(argv):
    if len(argv) != 1:
        print("usage: python3 -m invoicer ORDER.csv", file=sys.stderr)
        return 2
    print("\n".join(invoice_lines(argv[0], read_order(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

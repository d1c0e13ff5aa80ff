import unittest

from invoicer import rates
from invoicer.__main__ import invoice_lines


class InvoiceTest(unittest.TestCase):
    def test_total_is_net_plus_vat(self):
        lines = invoice_lines("x", [("a", 2, 10.0)])
        net, vat, total = (float(lines[i].split()[-2]) for i in (2, 3, 4))
        self.assertEqual(net, 20.0)
        self.assertAlmostEqual(vat, round(20.0 * rates.VAT_RATE, 2))
        self.assertAlmostEqual(total, net + vat)

    def test_terms_follow_the_rates(self):
        last = invoice_lines("x", [("a", 1, 1.0)])[-1]
        self.assertIn(f"within {rates.PAYMENT_TERMS_DAYS} days", last)
        self.assertTrue(last.endswith(rates.CURRENCY))


if __name__ == "__main__":
    unittest.main()

import unittest

from tidewatch import report, units


class ReportTest(unittest.TestCase):
    def test_one_line_per_tide(self):
        lines = report.report_lines("x", [("01:00", "high", 9.0), ("07:00", "low", 1.0)])
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[1].endswith("!"))
        self.assertIn(units.DEFAULT_UNIT, lines[2])


if __name__ == "__main__":
    unittest.main()

import unittest

from pantry.__main__ import scaled


class ScaleTest(unittest.TestCase):
    def test_quantities_scale(self):
        self.assertEqual(scaled("porridge", 2), ["100 g oats", "400 ml milk"])


if __name__ == "__main__":
    unittest.main()

import unittest

from geokit.__main__ import distance_km


class DistanceTest(unittest.TestCase):
    def test_same_point_is_zero(self):
        self.assertEqual(distance_km(10, 20, 10, 20), 0)

    def test_symmetric(self):
        self.assertAlmostEqual(distance_km(1, 2, 3, 4), distance_km(3, 4, 1, 2))


if __name__ == "__main__":
    unittest.main()

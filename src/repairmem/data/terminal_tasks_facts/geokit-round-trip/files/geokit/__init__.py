"""geokit: great-circle distances."""

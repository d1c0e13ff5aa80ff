"""clubroster: the membership database of a rowing club."""

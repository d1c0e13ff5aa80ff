"""tidewatch: the day's tides for a harbour."""

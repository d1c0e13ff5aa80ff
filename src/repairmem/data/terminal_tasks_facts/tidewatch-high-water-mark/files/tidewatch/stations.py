"""Known stations: their table file under data/."""

DEFAULT_STATION = "brest"
STATIONS = {"brest": "data/brest.csv", "cherbourg": "data/cherbourg.csv"}

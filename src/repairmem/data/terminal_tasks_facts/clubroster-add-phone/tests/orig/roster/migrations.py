"""The migrations: db/migrations/NNNN_<name>.sql, applied in number order."""
import re
import sqlite3
from pathlib import Path

FOLDER = Path("db/migrations")
NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def migrations():
    """The migration files in number order."""
    return sorted(p for p in FOLDER.glob("*.sql") if NAME.match(p.name))


def migrate(db):
    """Apply every migration to the open connection ``db``."""
    for path in migrations():
        db.executescript(path.read_text())


def schema():
    db = sqlite3.connect(":memory:")
    migrate(db)
    return [row[0] for row in db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")]


def problems():
    """What breaks the migration rules, one line each."""
    found = []
    numbered = migrations()
    stray = sorted(p for p in Path(".").rglob("*.sql") if p.parent != FOLDER or not NAME.match(p.name))
    for path in stray:
        stem = path.stem.split("_", 1)[1] if NAME.match(path.name) else path.stem
        nxt = f"{FOLDER}/{len(numbered) + 1:04d}_{stem}.sql"
        found.append(f"{path} is not a migration: migrations live in {FOLDER}/ and are named NNNN_<name>.sql, "
                     f"numbered in order (this one would be {nxt})")
    for n, path in enumerate(numbered, start=1):
        if int(NAME.match(path.name).group(1)) != n:
            found.append(f"{path}: migration numbers must run 0001, 0002, ... without gaps (expected {n:04d})")
    return found

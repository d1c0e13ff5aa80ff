import os
import sys

url = os.environ.get("DATABASE_URL")
level = os.environ.get("LOG_LEVEL")
if not url:
    sys.exit("DATABASE_URL is not set")
if level not in ("debug", "info", "warning", "error"):
    sys.exit(f"invalid LOG_LEVEL {level!r}")
print("config ok")

import configparser
from pathlib import Path

config = configparser.ConfigParser()
config.read(Path(__file__).with_name("config") / "app.ini")
host = config.get("server", "host")
port = config.getint("server", "port")
print(f"listening on {host}:{port}")

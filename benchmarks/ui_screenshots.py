"""Screenshots of ``repairmem ui``'s three main views (the memories, one memory, the store's picture)
into ``docs/ui/*.png``: ``python benchmarks/ui_screenshots.py [--out docs/ui]``.

A store of a dozen terminal memories in three projects is built in a temporary folder through
``repairmem.Memory`` and the service's verbs (hashing encoder), with gated recalls and their
feedback so the picture has decisions; then the real ``repairmem ui`` is started on a free port and
Debian's headless chromium (``apt-get install chromium chromium-driver``) is pointed at it through
selenium and ``/usr/bin/chromedriver`` (selenium-manager never runs). Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from repairmem import Memory, service

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

# (project, what failed, its log, the fix, verified by a check)
EPISODES = [
    ("shop-api", "pytest tests/", "ModuleNotFoundError: No module named 'requests'",
     "pip install requests && pytest tests/", True),
    ("shop-api", "python3 -m pytest", "/usr/bin/python3: No module named pytest", ".venv/bin/python -m pytest", True),
    ("shop-api", "alembic upgrade head", "sqlalchemy.exc.OperationalError: could not connect to server",
     "docker compose up -d db && alembic upgrade head", False),
    ("shop-web", "npm test", "sh: 1: jest: not found", "npm ci && npm test", True),
    ("shop-web", "npm run build", "Error: Cannot find module 'vite'", "npm install --save-dev vite && npm run build",
     True),
    ("shop-web", "./scripts/install-tools.sh", "bash: ./scripts/install-tools.sh: Permission denied",
     "curl -fsSL https://tools.example.com/install.sh | sudo bash", False),
    ("shop-web", "npx tsc --noEmit", "error TS2307: Cannot find module '@types/node'",
     "npm install --save-dev @types/node && npx tsc --noEmit", True),
    ("infra", "terraform plan", "Error: Inconsistent dependency lock file", "terraform init -upgrade && terraform plan",
     True),
    ("infra", "make deploy", "make: *** No rule to make target 'deploy'.  Stop.", "make -C ops deploy", False),
    ("infra", "ansible-playbook site.yml", "ERROR! the role 'common' was not found",
     "ansible-galaxy install -r requirements.yml && ansible-playbook site.yml", True),
    ("shop-api", "cargo build", "error[E0432]: unresolved import `serde`", "cargo add serde --features derive && "
     "cargo build", True),
    ("shop-web", "yarn lint", "error Command \"eslint\" not found.", "yarn add --dev eslint && yarn lint", False),
]


def build_store(path: Path) -> int:
    """The demo store at ``path``; the id of its risky memory (the one the memory view shows)."""
    risky = 0
    with Memory.open(path, encoder="hashing") as memory:
        for project, failed, log, fix, verified in EPISODES:
            got = service.call(memory, "record", {"task": f"make `{failed}` pass", "namespace": project,
                                                  "verified": verified,
                                                  "attempts": [{"command": failed, "outcome": "failed", "log": log},
                                                               {"command": fix, "outcome": "passed"}]})
            risky = got["memory_id"] if "sudo" in fix else risky
        for i in range(60):          # agents failing again, in each project, and what they said after
            project, failed, log, _, _ = EPISODES[i % len(EPISODES)]
            got = service.call(memory, "recall", {"failure": {"command": failed, "log": log, "project": project}})
            if got["action"] == "inject":
                flags = {"verified": True} if i % 5 else {"false_positive": True}
            elif got["action"] == "ask":
                flags = {"confirmed": True, "verified": True} if i % 3 else {"rejected": True}
            else:
                flags = {"correct_abstain": True}
            service.call(memory, "feedback", {"recall_id": got["recall_id"], **flags})
    return risky


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(store: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "repairmem", "ui", "--store", str(store), "--port", str(port),
                             "--encoder", "hashing"], cwd=ROOT)
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"repairmem ui exited {proc.returncode}")
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("repairmem ui did not answer")


def _browser(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1200,800", "--hide-scrollbars",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _save_small(png: bytes, path: Path) -> None:
    """The screenshot as a 128-colour PNG when Pillow is there (a third of the bytes), else as taken."""
    try:
        import io
        from PIL import Image
    except ImportError:
        path.write_bytes(png)
        return
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "ui"))
    args = parser.parse_args(argv)
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        raise SystemExit("no chromium/chromedriver at /usr/bin: apt-get install chromium chromium-driver")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="repairmem-ui-shots-"))
    proc = driver = None
    try:
        risky = build_store(work / "memory.db")
        port = _free_port()
        proc = _serve(work / "memory.db", port)
        driver = _browser(str(work / "profile"))
        base = f"http://127.0.0.1:{port}"
        for name, address in (("list", "/"), ("memory", f"/memory/{risky}"), ("picture", "/picture")):
            driver.get(base + address)
            _save_small(driver.get_screenshot_as_png(), out / f"{name}.png")
            print(f"{out / f'{name}.png'}: {base}{address}")
    finally:
        if driver is not None:
            driver.quit()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

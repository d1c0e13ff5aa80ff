cat > lib/loader.py <<'EOF'
from pathlib import Path


def load_words():
    """The non-empty lines of words.txt (next to this module), stripped."""
    with open(Path(__file__).with_name("words.txt"), encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]
EOF

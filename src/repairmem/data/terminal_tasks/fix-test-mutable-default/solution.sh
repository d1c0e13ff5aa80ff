cat > inventory.py <<'EOF'
def add_item(name, items=None):
    """Append name to items (a new list when not given) and return the list."""
    if items is None:
        items = []
    items.append(name)
    return items
EOF

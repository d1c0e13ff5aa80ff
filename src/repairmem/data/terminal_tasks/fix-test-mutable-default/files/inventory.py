def add_item(name, items=[]):
    """Append name to items (a new list when not given) and return the list."""
    items.append(name)
    return items

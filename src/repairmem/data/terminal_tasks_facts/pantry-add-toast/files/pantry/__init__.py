"""pantry: scale recipes for a number of servings."""

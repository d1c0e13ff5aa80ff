"""spellbook: word lists for a spell checker."""

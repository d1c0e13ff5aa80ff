"""Tiny text statistics."""


def word_count(text):
    return len(text.split())


def line_count(text):
    return len(text.splitlines())

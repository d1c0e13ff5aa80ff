"""``repairmem ui``: a local web page over a memory store (issue 45, item 1).

The memories listed with filters and a text search, one memory whole (its fix, its variants and
support, where it came from, its feedback counters and history, a warning on a risky command),
forget, trust (a person vouching for it in other projects) and correct behind a confirmation, and
the store's picture (the store report's numbers). Server-rendered HTML (``pages``, ``views``) from
a Starlette app under uvicorn (``app``), no script, no build step; the store is reached only through
the service's verbs on one ``Memory`` (``access``). ``repairmem.cli`` is the only module that
imports this package; importing it loads no web stack (``app`` is imported when a name of it is
asked for).
"""

__all__ = ["build_app", "open_store", "serve"]


def __getattr__(name: str):
    if name in __all__:
        from . import app
        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

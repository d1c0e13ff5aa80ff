"""The report's plots as PNG bytes: accuracy against tokens, learning curves, failure types (matplotlib)."""

from __future__ import annotations

import io
from typing import Any, Mapping

from .metrics import method_label

__all__ = ["draw_plots"]


def draw_plots(metrics: Mapping[str, Any]) -> dict[str, bytes]:
    """PNG bytes of each plot (matplotlib, Agg backend); ``{}`` when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    methods = metrics["method_order"]
    agg = metrics["methods"]
    palette = [plt.get_cmap("tab10")(i) for i in range(10)]
    colors = {x: palette[i % 10] for i, x in enumerate(methods)}
    styles = {x: ("-", "--", ":")[(i // 10) % 3] for i, x in enumerate(methods)}
    out: dict[str, bytes] = {}

    def png(fig) -> bytes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()

    with plt.rc_context({"font.size": 9}):
        fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
        for x in methods:
            mean, std = agg[x]["mean"], agg[x]["std"]
            ax.errorbar([mean["tokens_total"]], [mean["final_ex_pct"]],
                        yerr=[std["final_ex_pct"]] if std.get("final_ex_pct") is not None else None,
                        xerr=[std["tokens_total"]] if std.get("tokens_total") is not None else None,
                        fmt="o", color=colors[x], capsize=3, label=method_label(x))
            ax.annotate(method_label(x), (mean["tokens_total"], mean["final_ex_pct"]), textcoords="offset points",
                        xytext=(5, 4), fontsize=8)
        ax.set_xlabel("total tokens (initial + repair, prompt + completion), mean over seeds")
        ax.set_ylabel("final execution accuracy (%)")
        ax.set_title("Accuracy against tokens")
        ax.grid(alpha=.3)
        out["accuracy_vs_tokens"] = png(fig)

        fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
        for x in methods:
            curves = metrics["learning_curves"][x]
            for c in curves["seeds"].values():
                ax.plot(range(1, len(c) + 1), c, color=colors[x], alpha=.3, linewidth=.8)
            mean = curves["mean"]
            ax.plot(range(1, len(mean) + 1), mean, color=colors[x], linestyle=styles[x], linewidth=2,
                    label=method_label(x))
        ax.set_xlabel("stream position (episodes finalized)")
        ax.set_ylabel("cumulative repairs")
        ax.set_title("Learning curves")
        ax.grid(alpha=.3)
        ax.legend(fontsize=8, loc="best")
        out["learning_curves"] = png(fig)

        fig, axes = plt.subplots(1, 2, figsize=(10, 1.2 + 0.45 * max(len(methods), 3)), layout="constrained",
                                 sharey=True)
        types = sorted({t for x in methods for k in ("failure_types_initial", "failure_types_final")
                        for t in agg[x]["mean"][k]})
        type_colors = {t: plt.get_cmap("tab10")(i % 10) for i, t in enumerate(types)}
        labels = [method_label(x) for x in methods]
        for ax, key, title in zip(axes, ("failure_types_initial", "failure_types_final"),
                                  ("initial failures", "still failing after repair")):
            left = [0.0] * len(methods)
            for t in types:
                shares = []
                for x in methods:
                    counts = agg[x]["mean"][key]
                    total = sum(counts.values())
                    shares.append(100 * counts.get(t, 0) / total if total else 0.0)
                ax.barh(labels, shares, left=left, color=type_colors[t], label=t)
                left = [a + b for a, b in zip(left, shares)]
            ax.set_xlim(0, 100)
            ax.set_xlabel("share of failures (%)")
            ax.set_title(title)
        axes[0].invert_yaxis()   # shared y: the methods read top to bottom in table order
        if types:
            handles, names = axes[0].get_legend_handles_labels()
            fig.legend(handles, names, loc="outside lower center", ncols=min(len(types), 4), fontsize=8)
        out["failure_types"] = png(fig)
    return out

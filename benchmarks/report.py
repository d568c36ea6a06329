"""Tables (markdown) and the scaling plot from the benchmark results."""

from __future__ import annotations

from pathlib import Path


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def _mb(r: dict | None) -> str:
    return "-" if not r or not r["peak_mb"] else f"{max(r['peak_mb']):.0f}"


def _builtin(r: dict | None) -> str:
    if not r:
        return "-"
    return "failed" if r["error"] else _s(r["median"])


def _group(results: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["engine"], r["data"]), []).append(r)
    return groups


def summary_rows(results: list[dict]) -> list[dict]:
    """Per engine, data and strategy: ours, the fastest hand-written SQL, dbt's built-ins."""
    rows = []
    for (engine, _), group in _group(results).items():
        builtins = {r["method"]: r for r in group if r["kind"] == "dbt"}
        for ours in (r for r in group if r["kind"] == "ours"):
            sql = [
                r
                for r in group
                if r["kind"] == "sql" and r["strategy"] == ours["strategy"] and r["median"]
            ]
            best = min(sql, key=lambda r: r["median"]) if sql else None
            rows.append(
                {
                    "engine": engine,
                    "label": ours["label"],
                    "strategy": ours["strategy"],
                    "ours": ours,
                    "best": best,
                    "dbt_merge": builtins.get("dbt_merge"),
                    "dbt_delete_insert": builtins.get("dbt_delete_insert"),
                }
            )
    return rows


def markdown(meta: dict, results: list[dict]) -> str:
    out = [
        f"Run {meta['date']}, {'quick (1/10 sizes)' if meta['quick'] else 'full sizes'}, "
        f"median of {meta['reps']} run(s), {meta['wall_seconds']} s wall in all.",
        f"Machine: {meta['machine']}.",
        "Load average (1/5/15 min) at start {} and end {}: other work shared the machine.".format(
            *("/".join(f"{x:.1f}" for x in meta["load_average"][k]) for k in ("start", "end"))
        ),
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    out += [
        "### Summary: seconds of the merge step (median) and ratios of ours to each",
        "",
        "| engine | data | strategy | ours s | best hand-written SQL s | ours / SQL "
        "| dbt merge s | ours / dbt merge | dbt delete+insert s | ours / dbt d+i "
        "| peak RSS MB ours / SQL / dbt merge |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary_rows(results):
        ours, best, dm, di = row["ours"], row["best"], row["dbt_merge"], row["dbt_delete_insert"]
        om = ours["median"]

        def med(r: dict | None) -> float | None:
            return r["median"] if r and not r["error"] else None

        best_txt = f"{_s(med(best))} ({best['method']})" if best else "-"
        out.append(
            f"| {row['engine']} | {row['label']} | {row['strategy']} | {_s(om) if om else '-'} "
            f"| {best_txt} | {_ratio(om, med(best))} | {_builtin(dm)} "
            f"| {_ratio(om, med(dm))} | {_builtin(di)} "
            f"| {_ratio(om, med(di))} | {_mb(ours)} / {_mb(best)} / {_mb(dm)} |"
        )
    out += [
        "",
        "### Every measurement",
        "",
        "| engine | data | effect | method | median s | min-max s | peak RSS MB (at start) "
        "| same table as ours | statistics / error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        kind = {"ours": "merge materialization", "dbt": "dbt built-in", "sql": "hand-written SQL"}[
            r["kind"]
        ]
        spread = f"{min(r['seconds']):.2f}-{max(r['seconds']):.2f}" if r["seconds"] else "-"
        peak = f"{max(r['peak_mb']):.0f} ({min(r['start_mb']):.0f})" if r["peak_mb"] else "-"
        same = {True: "yes", False: "NO", None: ""}[r["same_result"]]
        note = (r["error"] or r["message"] or "").replace("|", "/")[:160]
        out.append(
            f"| {r['engine']} | {r['label']} | {r['strategy']} | {kind}: {r['method']} "
            f"| {_s(r['median'])} | {spread} | {peak} | {same} | {note} |"
        )
    scaling = scaling_series(results)
    if scaling:
        out += [
            "",
            "### Scaling of upsert on DuckDB (median seconds)",
            "",
            "| target rows | increment rows | ours | best hand-written SQL | dbt merge |",
            "|---|---|---|---|---|",
        ]
        for (t, i), m in sorted(scaling.items()):
            out.append(
                f"| {t:,} | {i:,} | {_s(m.get('ours'))} | {_s(m.get('sql'))} | {_s(m.get('dbt'))} |"
            )
    return "\n".join(out) + "\n"


def scaling_series(results: list[dict]) -> dict[tuple[int, int], dict[str, float]]:
    """Upsert on DuckDB, plain increments only: (target, increment) -> median seconds per kind."""
    points: dict[tuple[int, int], dict[str, float]] = {}
    for r in results:
        if r["engine"] != "duckdb" or r["strategy"] != "upsert" or not r["median"]:
            continue
        if "unchanged" in r["label"] or "duplicate" in r["label"]:
            continue
        if r["kind"] == "dbt" and r["method"] != "dbt_merge":
            continue
        p = points.setdefault((r["target_rows"], r["increment_rows"]), {})
        p[r["kind"]] = min(p.get(r["kind"], float("inf")), r["median"])
    return points if len(points) > 2 else {}


def plot_scaling(results: list[dict], path: Path) -> Path | None:
    points = scaling_series(results)
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = sorted({t for t, _ in points})
    increments = sorted({i for _, i in points})
    fixed_inc = sorted(increments)[1] if len(increments) > 1 else increments[0]
    fixed_target = max(set(t for t, i in points if i != fixed_inc) or {targets[0]})
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), dpi=80)
    names = {
        "ours": "merge (ours, upsert)",
        "sql": "best hand-written SQL",
        "dbt": "dbt built-in merge",
    }
    for ax, xs, key, title in (
        (axes[0], targets, lambda x: (x, fixed_inc), f"target grows, increment {fixed_inc:,}"),
        (
            axes[1],
            increments,
            lambda x: (fixed_target, x),
            f"increment grows, target {fixed_target:,}",
        ),
    ):
        for kind, style in (("ours", "o-"), ("sql", "s--"), ("dbt", "^:")):
            pts = [
                (x, points[key(x)][kind]) for x in xs if key(x) in points and kind in points[key(x)]
            ]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=names[kind])
        ax.set_xscale("log")
        ax.set_xlabel("rows")
        ax.set_ylabel("seconds")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("DuckDB upsert: merge step time", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path

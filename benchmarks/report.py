"""Tables (markdown) and the scaling plot from the benchmark results.

Runs of separate engines (e.g. `--engine spark` and `--engine spark_thrift`, each on an idle
machine) can be reported together, side by side:

    python -m benchmarks.report RUN1/results.json RUN2/results.json --out DIR [--docs]

A run written into benchmarks/results/ (`make bench`), or a report with --docs, also writes each
engine's scaling plot into docs/img/benchmarks/, where the docs site's benchmark page shows it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .project import NOT_EXPRESSIBLE, family


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


#: How the report names each engine, so local and cluster rows can be told apart.
ENGINE_LABELS = {
    "duckdb": "duckdb",
    "spark": "spark local[2] (session)",
    "spark_thrift": "spark cluster (thrift)",
}


def _engine(name: str) -> str:
    return ENGINE_LABELS.get(name, name)


def _mb(r: dict | None) -> str:
    """Peak RSS: the process doing the work; on the cluster the driver + the executors."""
    if not r or not r["peak_mb"]:
        return "-"
    text = f"{max(r['peak_mb']):.0f}"
    if r.get("executor_peak_mb"):
        text += f"+{max(r['executor_peak_mb']):.0f}"
    return text


def _med(r: dict | None) -> float | None:
    return r["median"] if r and not r["error"] else None


def _group(results: list[dict]) -> dict[tuple, list[dict]]:
    """Results measured on the same starting table and source, in the order they ran."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["engine"], r.get("workload", ""), r["data"]), []).append(r)
    return groups


def _reference(group: list[dict]) -> dict[str, dict]:
    """Per effect, our first method (the default configuration): what the others compare with."""
    ref: dict[str, dict] = {}
    for r in group:
        if r["kind"] == "ours":
            ref.setdefault(r["strategy"], r)
    return ref


def _fastest(rows: list[dict]) -> dict | None:
    done = [r for r in rows if _med(r)]
    return min(done, key=lambda r: r["median"]) if done else None


def best_builtin(group: list[dict], effect: str) -> tuple[dict | None, str]:
    """dbt's fastest built-in for `effect` that leaves our table (else any that ran, marked),
    and a note: '' or why the row shows no built-in or another effect's."""
    dbt = [r for r in group if r["kind"] == "dbt"]
    same = [r for r in dbt if r["strategy"] == effect]
    note = ""
    if not same and effect in ("insert", "update", "full_merge", "deduplicate"):
        same, note = [r for r in dbt if r["strategy"] == "upsert"], " (an upsert)"
    best = _fastest([r for r in same if r["same_result"] is not False])
    if best:
        return best, note
    best = _fastest(same)
    if best:
        return best, note + " (a different table)"
    if same:
        return same[0], note
    return None, ""


def summary_rows(results: list[dict]) -> list[dict]:
    """Per engine, workload, data and our method: the fastest hand-written SQL and the fastest
    dbt built-in of the same effect."""
    rows = []
    for (engine, workload, _), group in _group(results).items():
        for ours in (r for r in group if r["kind"] == "ours"):
            effect = ours["strategy"]
            best = _fastest([r for r in group if r["kind"] == "sql" and r["strategy"] == effect])
            dbt, note = best_builtin(group, effect)
            if dbt is None:
                note = NOT_EXPRESSIBLE.get((engine, workload), "")
            rows.append(
                {
                    "engine": engine,
                    "workload": workload,
                    "label": ours["label"],
                    "strategy": effect,
                    "ours": ours,
                    "best": best,
                    "dbt": dbt,
                    "dbt_note": note,
                }
            )
    return rows


def markdown(meta: dict, results: list[dict]) -> str:
    scale = meta.get("scale", 10 if meta["quick"] else 1)
    sizes = "full sizes" if scale == 1 else f"sizes divided by {scale}"
    out = [
        f"Run {meta['date']}, {sizes}, median of {meta['reps']} run(s), "
        f"{meta['wall_seconds']} s wall in all.",
        f"Machine: {meta['machine']}.",
        "Load average (1/5/15 min) at start {} and end {}: other work shared the machine.".format(
            *("/".join(f"{x:.1f}" for x in meta["load_average"][k]) for k in ("start", "end"))
        ),
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    differ = [r for r in results if r["same_result"] is False]
    out.append(
        "**Same-table check: every method left the table of its reference.**"
        if not differ
        else f"**Same-table check: {len(differ)} method(s) left another table than their "
        "reference:** "
        + "; ".join(
            f"{_engine(r['engine'])} {r.get('workload', '')} {r['method']} "
            f"vs {r.get('compared_with')}"
            for r in differ
        )
        + "."
    )
    out.append("")
    out += [
        "### Summary: seconds of the merge step (median) and ratios of ours to each",
        "",
        "Per our method: the fastest hand-written SQL of the same effect (no validation, no "
        "statistics) and the fastest dbt built-in that leaves the same table. Peak RSS: the "
        "process doing the work (see BENCHMARKS.md); on the Spark cluster driver+executors: "
        "the Thrift server's JVM (the driver) + the sum of the executor JVMs' peaks.",
        "",
        "| engine | workload | data | effect | ours | ours s | best hand-written SQL s "
        "| ours / SQL | best dbt built-in s | ours / dbt | peak RSS MB ours / SQL / dbt |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary_rows(results):
        ours, best, dbt = row["ours"], row["best"], row["dbt"]
        om = _med(ours)
        best_txt = f"{_s(_med(best))} ({best['method']})" if best else "-"
        if best and best["same_result"] is False:
            best_txt += " (a different table)"
        if dbt is None:
            dbt_txt = row["dbt_note"] or "-"
        elif dbt["error"]:
            dbt_txt = f"failed ({dbt['method']}){row['dbt_note']}"
        else:
            dbt_txt = f"{_s(_med(dbt))} ({dbt['method']}){row['dbt_note']}"
        ours_txt = _s(om) if om else "failed"
        out.append(
            f"| {_engine(row['engine'])} | {row['workload']} | {row['label']} | {row['strategy']} "
            f"| {ours['method']} | {ours_txt} | {best_txt} | {_ratio(om, _med(best))} "
            f"| {dbt_txt} | {_ratio(om, _med(dbt))} | {_mb(ours)} / {_mb(best)} / {_mb(dbt)} |"
        )
    out += spark_side_by_side(results)
    out += [
        "",
        "### Every measurement",
        "",
        '"ours / this": our default method for the same effect (the first `ours` row of the '
        "effect) over this one. \"same table\": this method's final table against that one's "
        "(row count and sum of row hashes), or against the method named when ours failed.",
        "",
        "| engine | workload | data | effect | method | median s | min-max s "
        "| peak RSS MB (at start) | ours / this | same table | statistics / error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group in _group(results).values():
        ref = _reference(group)
        for r in group:
            kind = {"ours": "ours", "dbt": "dbt built-in", "sql": "hand-written SQL"}[r["kind"]]
            spread = f"{min(r['seconds']):.2f}-{max(r['seconds']):.2f}" if r["seconds"] else "-"
            peak = f"{_mb(r)} ({min(r['start_mb']):.0f})" if r["peak_mb"] else "-"
            same = {True: "yes", False: "NO", None: ""}[r["same_result"]]
            default = ref.get(r["strategy"])
            if r.get("compared_with") and (not default or default["method"] != r["compared_with"]):
                same += f" (vs {r['compared_with']})"
            base = default or ref.get("upsert")
            ratio = "" if base is r else _ratio(_med(base), _med(r))
            note = (r["error"] or r["message"] or "").replace("|", "/")[:200]
            out.append(
                f"| {_engine(r['engine'])} | {r.get('workload', '')} | {r['label']} "
                f"| {r['strategy']} | {kind}: {r['method']} | {_s(r['median'])} | {spread} "
                f"| {peak} | {ratio} | {same} | {note} |"
            )
    out += scaling_tables(results)
    return "\n".join(out) + "\n"


def spark_side_by_side(results: list[dict]) -> list[str]:
    """Spark local[2] (session) and the cluster (thrift) in one table: per workload, data and
    our method, seconds and the ratios to dbt-spark's merge and to the best hand-written SQL."""
    rows: dict[tuple, dict[str, dict]] = {}
    for row in summary_rows(results):
        if row["engine"] in ("spark", "spark_thrift"):
            key = (row["workload"], row["label"], row["strategy"], row["ours"]["method"])
            rows.setdefault(key, {})[row["engine"]] = row
    if not any(len(by_engine) == 2 for by_engine in rows.values()):
        return []
    out = [
        "",
        "### Spark side by side: local[2] (session) and cluster (thrift)",
        "",
        "Seconds of the merge step (median) and ratios of ours to dbt-spark's built-in merge "
        "(an upsert, where the effect differs: see the summary) and to the best hand-written "
        "SQL, on each engine.",
        "",
        "| workload | data | effect | ours | local s | local / dbt | local / SQL "
        "| cluster s | cluster / dbt | cluster / SQL |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (workload, label, effect, method), by_engine in rows.items():
        cells = []
        for engine in ("spark", "spark_thrift"):
            row = by_engine.get(engine)
            if row is None:
                cells += ["-", "-", "-"]
                continue
            om = _med(row["ours"])
            cells += [
                _s(om) if om else "failed",
                _ratio(om, _med(row["dbt"])),
                _ratio(om, _med(row["best"])),
            ]
        out.append(f"| {workload} | {label} | {effect} | {method} | " + " | ".join(cells) + " |")
    return out


#: The workloads whose upsert measurements make up an engine's scaling series: DuckDB's plain
#: increments of every workload; on Spark the scaling workload alone (the increments workload
#: measures its 2M/200k point again, in another step of the run).
SCALING_WORKLOADS = {"duckdb": ("increments", "small", "scaling"), "spark": ("scaling",)}
#: The methods of the scaling series: per kind, how the plot names it and its line style.
SCALING_METHODS = {
    "ours": ("merge (ours, upsert)", "o-"),
    "sql": ("best hand-written SQL", "s--"),
    "dbt": ("dbt built-in merge", "^:"),
}


def scaling_series(results: list[dict], engine: str) -> dict[tuple[int, int], dict]:
    """Upsert on `engine`, plain increments only: (target, increment) -> median seconds per
    kind (and the result measured, under '<kind>_result')."""
    workloads = SCALING_WORKLOADS[family(engine)]
    points: dict[tuple[int, int], dict] = {}
    for r in results:
        if r["engine"] != engine or r["strategy"] != "upsert" or not _med(r):
            continue
        if r.get("workload", "increments") not in workloads:
            continue
        if "unchanged" in r["label"] or "duplicate" in r["label"]:
            continue
        if r["method"] not in ("ours_upsert", "dbt_merge") and r["kind"] != "sql":
            continue
        p = points.setdefault((r["target_rows"], r["increment_rows"]), {})
        if r["median"] < p.get(r["kind"], float("inf")):
            p[r["kind"]], p[f"{r['kind']}_result"] = r["median"], r
    return points if len(points) > 2 else {}


def scaling_engines(results: list[dict]) -> dict[str, dict[tuple[int, int], dict]]:
    """Each engine of the results that has a scaling series (in the order they ran): its series."""
    series = {}
    for engine in dict.fromkeys(r["engine"] for r in results):
        points = scaling_series(results, engine)
        if points:
            series[engine] = points
    return series


def scaling_tables(results: list[dict]) -> list[str]:
    """Per engine, the scaling series: seconds per method and ours over each other method."""
    out = []
    for engine, points in scaling_engines(results).items():
        out += [
            "",
            f"### Scaling of upsert on {_engine(engine)} (median seconds; peak RSS MB)",
            "",
            "| target rows | increment rows | ours | best hand-written SQL | dbt merge "
            "| ours / SQL | ours / dbt merge | peak MB ours / SQL / dbt merge |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (t, i), m in sorted(points.items()):
            mb = " / ".join(_mb(m.get(f"{k}_result")) for k in SCALING_METHODS)
            out.append(
                f"| {t:,} | {i:,} | {_s(m.get('ours'))} | {_s(m.get('sql'))} "
                f"| {_s(m.get('dbt'))} | {_ratio(m.get('ours'), m.get('sql'))} "
                f"| {_ratio(m.get('ours'), m.get('dbt'))} | {mb} |"
            )
    return out


def _duckdb_panels(points: dict) -> list[tuple]:
    """DuckDB: the target grows at a fixed increment, and the increment at a fixed target
    (the points the workloads measured); each panel (title, x label, [(x, point)])."""
    targets = sorted({t for t, _ in points})
    increments = sorted({i for _, i in points})
    fixed_inc = increments[1] if len(increments) > 1 else increments[0]
    fixed_target = max(set(t for t, i in points if i != fixed_inc) or {targets[0]})
    return [
        (
            f"target grows, increment {fixed_inc:,}",
            "target rows",
            [(t, points[t, fixed_inc]) for t in targets if (t, fixed_inc) in points],
        ),
        (
            f"increment grows, target {fixed_target:,}",
            "increment rows",
            [(i, points[fixed_target, i]) for i in increments if (fixed_target, i) in points],
        ),
    ]


def _target_panels(points: dict) -> list[tuple]:
    """One panel per increment size, the target size on x (Spark's scaling workload)."""
    return [
        (
            f"increment {inc:,}",
            "target rows",
            sorted((t, p) for (t, i), p in points.items() if i == inc),
        )
        for inc in sorted({i for _, i in points})
    ]


#: Where a full run writes (`make bench`: benchmarks/results/) and where the docs site takes the
#: scaling plots from (docs/benchmarks.md): a plot written into the first is also written into
#: the second, one file per engine, `scaling_<engine>.png`.
RESULTS = Path(__file__).resolve().parent / "results"
DOCS_PLOTS = Path(__file__).resolve().parents[1] / "docs" / "img" / "benchmarks"


def plot_scaling(results: list[dict], path: Path, docs: Path | None = None) -> Path | None:
    """The scaling plot of every engine of the results into `path`, and each engine's own into
    `docs` (default DOCS_PLOTS when `path` is in RESULTS, else none); None without a series."""
    series = scaling_engines(results)
    if not series:
        return None
    _draw_scaling(series, path)
    if docs is None and path.resolve().parent == RESULTS:
        docs = DOCS_PLOTS
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        for engine, points in series.items():
            _draw_scaling({engine: points}, docs / f"scaling_{engine}.png")
    return path


def _draw_scaling(series: dict[str, dict], path: Path) -> None:
    """One row of panels per engine with a scaling series, a line per method. DuckDB: log
    axes over its spread of sizes; Spark: linear axes from zero, the same seconds scale in
    every panel, so a cost proportional to the target is a line through the origin."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    rows = {
        engine: (_duckdb_panels if family(engine) == "duckdb" else _target_panels)(points)
        for engine, points in series.items()
    }
    ncols = max(len(panels) for panels in rows.values())
    fig, axes = plt.subplots(
        len(rows), ncols, figsize=(4 * ncols, 3.2 * len(rows)), dpi=80, squeeze=False
    )
    for row_axes, (engine, panels) in zip(axes, rows.items(), strict=True):
        log = family(engine) == "duckdb"
        top = max(p[k] for _, _, pts in panels for _, p in pts for k in SCALING_METHODS if k in p)
        for ax, (title, xlabel, pts) in zip(row_axes, panels, strict=False):
            for kind, (name, style) in SCALING_METHODS.items():
                line = [(x, p[kind]) for x, p in pts if kind in p]
                if line:
                    ax.plot([x for x, _ in line], [y for _, y in line], style, label=name)
            if log:
                ax.set_xscale("log")
            else:
                ax.set_xlim(0, max(x for x, _ in pts) * 1.1)
                ax.xaxis.set_major_formatter(EngFormatter(sep=""))
                ax.set_ylim(0, top * 1.1)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("seconds")
            ax.set_title(f"{_engine(engine)}: {title}", fontsize=9)
            ax.grid(alpha=0.3)
        row_axes[0].legend(fontsize=7)
        for ax in row_axes[len(panels) :]:
            ax.set_visible(False)
    fig.suptitle("Upsert: merge step time (median)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def combine(runs: list[dict]) -> tuple[dict, list[dict]]:
    """One report's meta and results from several runs' results.json: every run's meta line is
    kept (dates, load, versions), the results concatenated in the order given."""
    first = runs[0]["meta"]
    meta = dict(first)
    meta["engine"] = "+".join(r["meta"]["engine"] for r in runs)
    meta["date"] = "; ".join(f"{r['meta']['engine']} {r['meta']['date']}" for r in runs)
    meta["reps"] = "; ".join(f"{r['meta']['engine']} {r['meta']['reps']}" for r in runs)
    meta["wall_seconds"] = sum(r["meta"]["wall_seconds"] for r in runs)
    meta["load_average"] = {
        "start": first["load_average"]["start"],
        "end": runs[-1]["meta"]["load_average"]["end"],
    }
    meta["versions"] = {k: v for r in runs for k, v in r["meta"]["versions"].items()}
    scales = {r["meta"].get("scale") for r in runs}
    if len(scales) > 1:
        raise SystemExit(f"runs at different scales ({sorted(scales)}) are not comparable")
    return meta, [res for r in runs for res in r["results"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results.json of each run")
    parser.add_argument("--out", type=Path, required=True, help="folder for results.md/json")
    parser.add_argument(
        "--docs", action="store_true",
        help="also write each engine's scaling plot into docs/img/benchmarks/ (the docs site's "
        "benchmark page; a run into benchmarks/results/ does so anyway)",
    )
    args = parser.parse_args(argv)
    meta, results = combine([json.loads(p.read_text()) for p in args.results])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    text = markdown(meta, results)
    (args.out / "results.md").write_text(text)
    plot_scaling(results, args.out / "scaling.png", DOCS_PLOTS if args.docs else None)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

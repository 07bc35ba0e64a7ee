#!/usr/bin/env python3
"""How the measured and the predicted TTFT of the AIConfigurator rows move with output length and concurrency.

Usage:
  shardplan serve validate --runs tests/validation/serving/serving_runs.yaml --json > sv.json
  python3 tests/validation/serving/ttft_shape.py sv.json tests/validation/serving/serving_runs.yaml [--min-rows N]

Aggregated 'datacenter' rows only. Two tables:
  1. Output length: rows that differ only in output length (same engine, version, GPU, model, tp, attention DP,
     input length, concurrency) form a group; per family (engine, version, GPU, model) it prints the median of
     TTFT(longest output) / TTFT(shortest output), measured and predicted. A queue in which a new request waits
     for a running one to finish grows with the output length; a cost paid per prompt does not.
  2. Concurrency: per family, tp and input length, a least-squares line TTFT = a + b x concurrency (ms), measured
     and predicted. The slope says how much each extra client adds to every request's TTFT.
Diagnostic only: nothing here feeds the model.
"""
import argparse
import json
import statistics

import yaml


def rows_of(json_path, runs_path):
    with open(runs_path) as f:
        runs = yaml.safe_load(f)
    by_id = {r["id"]: r for r in (runs["runs"] if isinstance(runs, dict) else runs)}
    with open(json_path) as f:
        result = json.load(f)
    out = []
    for r in result["runs"]:
        if r.get("skipped") or r.get("family") != "datacenter" or "TTFT" not in r["metrics"]:
            continue
        y = by_id[r["id"]]
        plan, wl = y["plan"], y["workload"]
        if (plan.get("mode") or "aggregated") != "aggregated" or wl.get("concurrency") is None:
            continue
        out.append({
            "family": (y["engine"], str(y.get("engine_version")), y["system"]["gpu"],
                       y["model"]["name"].split("/")[-1]),
            "tp": plan.get("tp"), "adp": plan.get("attention_dp"), "isl": wl["input_len"], "osl": wl["output_len"],
            "conc": wl["concurrency"], "measured": r["metrics"]["TTFT"]["measured"],
            "predicted": r["metrics"]["TTFT"]["predicted"],
        })
    return out


def line(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("runs")
    ap.add_argument("--min-rows", type=int, default=4, help="smallest (family, tp, isl) set to fit a line to")
    a = ap.parse_args()
    rows = rows_of(a.json, a.runs)

    groups = {}
    for r in rows:
        groups.setdefault((r["family"], r["tp"], r["adp"], r["isl"], r["conc"]), []).append(r)
    ratios = {}
    for k, v in groups.items():
        if len({r["osl"] for r in v}) < 2:
            continue
        v.sort(key=lambda r: r["osl"])
        lo, hi = v[0], v[-1]
        ratios.setdefault(k[0], []).append((hi["measured"] / lo["measured"], hi["predicted"] / lo["predicted"],
                                            hi["osl"] / lo["osl"]))
    print("%-62s %6s %9s %9s %8s" % ("family (output length)", "groups", "measured", "predicted", "osl x"))
    for fam in sorted(ratios):
        v = ratios[fam]
        print("%-62s %6d %9.2f %9.2f %8.0f" % (" ".join(fam), len(v), statistics.median(x[0] for x in v),
                                               statistics.median(x[1] for x in v),
                                               statistics.median(x[2] for x in v)))

    sets = {}
    for r in rows:
        sets.setdefault((r["family"], r["tp"], r["isl"]), []).append(r)
    print()
    print("%-62s %5s %8s %19s %19s" % ("family tp isl (concurrency)", "rows", "conc", "measured a + b c",
                                       "predicted a + b c"))
    for k in sorted(sets, key=str):
        v = sets[k]
        cs = [r["conc"] for r in v]
        if len(v) < a.min_rows or len(set(cs)) < 3:
            continue
        ma, mb = line(cs, [r["measured"] for r in v])
        pa, pb = line(cs, [r["predicted"] for r in v])
        print("%-62s %5d %8s %10.0f + %5.2f c %10.0f + %5.2f c" % (
            " ".join(k[0]) + " tp%s isl%d" % (k[1], k[2]), len(v), "%d-%d" % (min(cs), max(cs)), ma, mb, pa, pb))


if __name__ == "__main__":
    main()

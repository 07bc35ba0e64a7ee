#!/usr/bin/env python3
"""Group serve-validate errors of the AIConfigurator rows by row attributes.

Usage:
  shardplan serve validate --runs tests/validation/serving/serving_runs.yaml --json > sv.json
  python3 tests/validation/serving/group_errors.py sv.json tests/validation/serving/serving_runs.yaml \
      [--metric TPOT|TTFT] [--by engine,mode,gpu,model,tp,conc,version,wprec,kv] [--min-rows N]

Prints, per group: rows, MAPE, signed median error (%), of the chosen metric, only for the rows of family
'datacenter' (the AIConfigurator rows). Keys: engine, version, mode, gpu, model, tp (decode worker's tp; 'tpxAdp'
with attention DP), conc (concurrency bucket), isl, osl, wprec, kv, batch (decode worker's per-rank batch).
"""
import argparse
import json
import statistics
import sys

import yaml


def conc_bucket(c):
    if c is None:
        return "none"
    for b in (1, 4, 8, 16, 32, 64, 128, 256, 512):
        if c <= b:
            return "<=%d" % b
    return ">512"


def row_keys(r):
    plan = r.get("plan") or {}
    mode = plan.get("mode") or "aggregated"
    w = plan.get("decode") if mode == "disaggregated" else plan
    w = w or {}
    tp = w.get("tp") or 1
    adp = w.get("attention_dp") or 1
    wl = r.get("workload") or {}
    model = (r.get("model") or {}).get("name", "?").split("/")[-1]
    return {
        "engine": r.get("engine"),
        "version": str(r.get("engine_version")),
        "mode": mode,
        "gpu": (r.get("system") or {}).get("gpu"),
        "model": model,
        "tp": "tp%d" % tp + ("xadp%d" % adp if adp > 1 else ""),
        "conc": conc_bucket(wl.get("concurrency")),
        "isl": str(wl.get("input_len")),
        "osl": str(wl.get("output_len")),
        "wprec": str(r.get("weights_precision")),
        "kv": str(r.get("kv_precision")),
        "batch": str(w.get("batch") or plan.get("max_batch")),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("runs")
    ap.add_argument("--metric", default="TPOT")
    ap.add_argument("--by", default="engine,mode")
    ap.add_argument("--min-rows", type=int, default=1)
    a = ap.parse_args()
    with open(a.runs) as f:
        runs = {r["id"]: r for r in yaml.safe_load(f)}
    with open(a.json) as f:
        res = json.load(f)
    keys = a.by.split(",")
    groups = {}
    for row in res["runs"]:
        if row.get("skipped") or row.get("family") != "datacenter":
            continue
        m = (row.get("metrics") or {}).get(a.metric)
        if not m or "error_pct" not in m:
            continue
        k = row_keys(runs[row["id"]])
        g = tuple(k[x] for x in keys)
        groups.setdefault(g, []).append(m["error_pct"])
    allerr = [e for v in groups.values() for e in v]
    print("%-60s %5s %7s %8s" % (",".join(keys), "rows", "MAPE", "median"))
    for g in sorted(groups):
        v = groups[g]
        if len(v) < a.min_rows:
            continue
        print("%-60s %5d %6.1f%% %+7.1f%%" % (" ".join(g), len(v), statistics.mean(abs(e) for e in v),
                                             statistics.median(v)))
    if allerr:
        print("%-60s %5d %6.1f%% %+7.1f%%" % ("all aic rows", len(allerr), statistics.mean(abs(e) for e in allerr),
                                             statistics.median(allerr)))


if __name__ == "__main__":
    sys.exit(main())

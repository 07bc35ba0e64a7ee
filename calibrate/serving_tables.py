#!/usr/bin/env python3
"""Derives the serving model's measured-kernel tables from hwprofiles/measured/serving/ (a row subset of NVIDIA
AIConfigurator's measured kernel database, written by calibrate/compact_aic.sh; README there) and writes each
table's rows as a generated include file that the table's .cc file includes:

  python3 calibrate/serving_tables.py [MEASURED_DIR (hwprofiles/measured)] [OUT_DIR (modeler/serving)]

  decode_gemm_rows.inc       decode_gemm_table.cc       serving/gemm.csv.gz, m < 128
  prefill_gemm_rows.inc      prefill_gemm_table.cc      serving/gemm.csv.gz, m >= 128
  decode_attention_rows.inc  decode_attention_table.cc  serving/attention_decode.csv
  moe_rows.inc               moe_table.cc (kRows)       serving/moe.csv.gz, <= 16 rows per expert, per rows
  moe_flop_rows.inc          moe_table.cc (kFlopRows)   serving/moe.csv.gz, > 16 rows per expert
  allreduce_rows.inc         allreduce_table.cc         serving/custom_allreduce.csv
  small_kernel_rows.inc      decode_gemm_table.cc       serving/gemm.csv.gz, bf16, m = 1, n, k in {128, 256}

Each derivation is the one the table's .cc header comment states; the functions below name the choices that
comment leaves implicit (GPU set, dtypes, rounding). `make serving-tables` runs this script;
tests/cli/serving_tables_cli_test.sh regenerates into a temp dir and compares with the committed include files.
Python's statistics.median (mean of the two middle values for an even count) and round() (half to even) give the
committed values; the standard library only, so the test needs nothing beyond python3.
"""
import csv
import gzip
import io
import math
import os
import statistics
import sys

# AIC system -> shardplan GPU profile name (hwprofiles/gpus/), as calibrate/aic_import.cc maps them.
PROFILE = {
    "a100_sxm": "a100-sxm4-80gb", "h100_sxm": "h100-sxm5-80gb", "h200_sxm": "h200-sxm-141gb", "b200_sxm": "b200",
    "gb200": "gb200", "b300_sxm": "b300", "gb300": "gb300", "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000-server",
}
# Profiles of the same silicon and HBM generation that AIC did not measure: they get a copy of the measured row
# (decode GEMM, decode attention and prefill GEMM tables; moe_table.cc maps them in code instead).
ALIASES = {"a100-sxm4-80gb": ["a100-sxm4-40gb"], "h100-sxm5-80gb": ["h100-sxm5-96gb", "h800-sxm5-80gb"]}
# The all-reduce copies leave the H800 out: its NVLink runs at 400 GB/s, not the H100's 900
# (hwprofiles/gpus/h800-sxm5-80gb.yaml and its sources), so the H100's all-reduce latencies are not its own; it
# keeps the collective model.
ALLREDUCE_ALIASES = {"a100-sxm4-80gb": ["a100-sxm4-40gb"], "h100-sxm5-80gb": ["h100-sxm5-96gb"]}
# The custom all-reduce table covers the NVLink parts only: L40S and RTX PRO 6000 Server are PCIe boards, where
# vLLM turns its custom all-reduce off above two GPUs (vllm/distributed/device_communicators/custom_all_reduce.py)
# so the measured `*_graph` rows above two GPUs time NCCL over PCIe (27 ms for 64 MiB over 4 L40S), which the
# collective model already covers. The committed table was derived over this set.
NVLINK = ("a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm", "gb200", "b300_sxm", "gb300")
# Storage bits per weight of the MoE expert formats, as modeler/serving/formats.cc bits_per_weight() states them
# (fp8_block: one fp32 scale per 128x128 block; nvfp4: one E4M3 scale per 16; int4_wo: fp16 scale + packed zero
# per 128; MXFP4: one E8M0 scale per 32). AIC's w4afp8 (9 rows) has no shardplan format and is not used.
MOE_BITS = {"bf16": 16.0, "fp8": 8.0, "fp8_block": 8.0 + 32.0 / (128 * 128), "int4_wo": 4.0 + 20.0 / 128,
            "nvfp4": 4.0 + 8.0 / 16, "w4a16_mxfp4": 4.0 + 8.0 / 32, "w4a8_mxfp4_mxfp8": 4.0 + 8.0 / 32}


def read(directory, name):
    """The rows of serving/NAME (.csv or .csv.gz) as dicts; rows without a median latency are not measurements."""
    path = os.path.join(directory, "serving", name)
    if os.path.exists(path):
        text = open(path, encoding="utf-8").read()
    elif os.path.exists(path + ".gz"):
        text = gzip.open(path + ".gz", "rt", encoding="utf-8").read()
    else:
        sys.exit(f"{path}: missing (run calibrate/compact_aic.sh SRC_DIR {directory})")
    return list(csv.DictReader(io.StringIO(text)))


def log2_bin(x):
    return round(math.log2(x))


def medians(bins, lo, hi, fill):
    """Per key, the median of each bin lo..hi; `fill` says what an empty bin takes."""
    out = {}
    for key, by_bin in bins.items():
        values = [statistics.median(by_bin[b]) if b in by_bin else None for b in range(lo, hi + 1)]
        out[key] = fill(key, values, lo)
    return out


def no_gaps(key, values, lo):
    if None in values:
        sys.exit(f"{key[0]} {key[1]}: empty bin 2^{lo + values.index(None)}; the derivation has no rule for it")
    return values


def top_repeats_below(key, values, lo):
    """decode_attention_table.cc: an empty top bin repeats the one below (any other gap is an error)."""
    n = len(values)
    while n > 0 and values[n - 1] is None:
        n -= 1
    if n == 0 or None in values[:n]:
        return no_gaps(key, values, lo)
    return values[:n] + [values[n - 1]] * (len(values) - n)


def nearest_lower_else_upper(key, values, lo):
    """moe_table.cc: an empty bin repeats its nearest lower (else upper) neighbour."""
    if all(v is None for v in values):
        return no_gaps(key, values, lo)
    out = list(values)
    for i, v in enumerate(values):
        if v is None:
            lower = [x for x in values[:i] if x is not None]
            out[i] = lower[-1] if lower else next(x for x in values[i + 1:] if x is not None)
    return out


def decode_gemm(d):
    """Rows with m < 128 and n*k*bytes >= 1 MiB (bf16 2 bytes, fp8 1), rate = n*k*bytes / latency_us_median,
    bins round(log2(weight bytes)) 2^20..2^32, the bin's median rate in GB/s; one row per measured m, except that
    m <= 16 (AIC's 1, 4, 16) pools into one row keyed 16, as the table had before the larger m were carried."""
    bins = {}
    for r in read(d, "gemm.csv"):
        if r["dtype"] not in ("bf16", "fp8") or int(r["m"]) >= 128 or not r["latency_us_median"]:
            continue
        b = int(r["n"]) * int(r["k"]) * (2 if r["dtype"] == "bf16" else 1)
        if b < 2**20:
            continue
        rate = b / float(r["latency_us_median"]) / 1e3  # bytes/us -> GB/s
        key = (PROFILE[r["system"]], (r["dtype"], max(16, int(r["m"]))))
        bins.setdefault(key, {}).setdefault(log2_bin(b), []).append(rate)
    return medians(bins, 20, 32, no_gaps)


def prefill_gemm(d):
    """Rows with m >= 128 and n, k >= 1024, flops = 2 m n k, rate = flops / latency_us_median, bins
    round(log2(flops)) 2^30..2^44, the bin's median rate in TFLOP/s (dtypes bf16, fp8, fp8_block)."""
    bins = {}
    for r in read(d, "gemm.csv"):
        if r["dtype"] not in ("bf16", "fp8", "fp8_block") or not r["latency_us_median"]:
            continue
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        if m < 128 or n < 1024 or k < 1024:
            continue
        f = 2 * m * n * k
        rate = f / float(r["latency_us_median"]) / 1e6  # FLOP/us -> TFLOP/s
        bins.setdefault((PROFILE[r["system"]], r["dtype"]), {}).setdefault(log2_bin(f), []).append(rate)
    return medians(bins, 30, 44, no_gaps)


def decode_attention(d):
    """window_size 0, head_dim 128, kv_heads 8, heads >= 32; bytes = batch (kv_len + 1) kv_heads head_dim 2 x
    element size; rows with bytes >= 64 KiB, bins round(log2(bytes)) 2^16..2^31; per bin the median rate of each
    scope, then the faster scope; an empty top bin repeats the one below."""
    bins = {}
    for r in read(d, "attention_decode.csv"):
        if (r["window_size"] != "0" or r["head_dim"] != "128" or r["kv_heads"] != "8" or int(r["heads"]) < 32
                or not r["latency_us_median"]):
            continue
        size = 2 if r["kv_dtype"] == "bf16" else 1
        b = int(r["batch"]) * (int(r["kv_len"]) + 1) * 8 * 128 * 2 * size
        if b < 2**16:
            continue
        rate = b / float(r["latency_us_median"]) / 1e3
        key = (PROFILE[r["system"]], r["kv_dtype"])
        bins.setdefault(key, {}).setdefault(r["scope"], {}).setdefault(log2_bin(b), []).append(rate)
    out = {}
    for key, scopes in bins.items():
        values = []
        for b in range(16, 32):
            per_scope = [statistics.median(s[b]) for s in scopes.values() if b in s]
            values.append(max(per_scope) if per_scope else None)
        out[key] = top_repeats_below(key, values, 16)
    return out


def balanced_rank0(tokens, experts, top_k, ep):
    """(touched, pairs): the local experts EP rank 0 (experts 0 .. experts/ep - 1) receives tokens on, and the
    token-expert pairs it gets, under AIConfigurator's `balanced` routing (aiconfigurator@095f58a5:
    collector/helper.py balanced_logits: stride = ceil(experts / top_k); token i picks (i + j stride) mod experts
    when tokens >= stride, else floor(i stride / tokens) + j stride; the one-hot logits' top-k are those experts;
    collector/sglang/collect_moe.py build_rank0_workloads keeps rank 0's share the same way). The picks spread
    over all experts, so rank 0 of ep sees about 1/ep of the pairs, not the first tokens x top_k experts."""
    stride = -(-experts // top_k)
    local = experts // ep
    load = {}
    for i in range(tokens):
        picks = {((i + j * stride) if tokens >= stride else (i * stride // tokens + j * stride)) % experts
                 for j in range(top_k)}
        for x in picks:
            if x < local:
                load[x] = load.get(x, 0) + 1
    return len(load), sum(load.values())


def moe_rows(d):
    """Balanced routing, gated geometries (not top_k 22, not 2688/1856/128/6). <= 16 rows per expert
    (tokens top_k / experts): the local experts rank 0 touches and their pairs (balanced_rank0); rows = pairs /
    touched (the token rows of one touched expert), keyed 2^round(log2(rows)) (1, 2, 4, 8, 16); bytes = touched
    x 3 hidden expert_ffn / tp x bits/8, GB/s in bins 2^22..2^32 per key. Above 16: flops = 2 tokens top_k / ep x
    3 hidden expert_ffn / tp, TFLOP/s in bins 2^30..2^44. Empty bins repeat the nearest lower (else upper)
    neighbour."""
    by_bytes, by_flops, rank0 = {}, {}, {}
    for r in read(d, "moe.csv"):
        if r["distribution"] != "balanced" or r["dtype"] not in MOE_BITS or not r["latency_us_median"]:
            continue
        t, h, f, e, k, tp, ep = (int(r[c]) for c in ("tokens", "hidden", "expert_ffn", "experts", "top_k", "tp", "ep"))
        if k == 22 or (h, f, e, k) == (2688, 1856, 128, 6):  # ReLU^2 (non-gated) Nemotron layers
            continue
        lat = float(r["latency_us_median"])
        if t * k / e <= 16:
            if (t, e, k, ep) not in rank0:
                rank0[(t, e, k, ep)] = balanced_rank0(t, e, k, ep)
            touched, pairs = rank0[(t, e, k, ep)]
            b = touched * 3 * h * f / tp * MOE_BITS[r["dtype"]] / 8
            key = (PROFILE[r["system"]], (r["dtype"], 2 ** log2_bin(pairs / touched)))
            by_bytes.setdefault(key, {}).setdefault(log2_bin(b), []).append(b / lat / 1e3)
        else:
            fl = 2 * t * k / ep * 3 * h * f / tp
            by_flops.setdefault((PROFILE[r["system"]], r["dtype"]), {}).setdefault(log2_bin(fl), []).append(
                fl / lat / 1e6)
    return (medians(by_bytes, 22, 32, nearest_lower_else_upper),
            medians(by_flops, 30, 44, nearest_lower_else_upper))


def allreduce(d):
    """kind custom_allreduce, implementation *_graph, bf16, one node, 2^12..2^26 bytes; the median latency (us) over
    every implementation x version at that size; NVLink GPUs."""
    bins = {}
    for r in read(d, "custom_allreduce.csv"):
        if (r["kind"] != "custom_allreduce" or not r["implementation"].endswith("_graph") or r["dtype"] != "bf16"
                or r["nodes"] != "1" or r["system"] not in NVLINK or not r["latency_us"]):
            continue
        b = int(r["bytes"])
        if b < 2**12 or b > 2**26:
            continue
        bins.setdefault((PROFILE[r["system"]], int(r["gpus"])), {}).setdefault(log2_bin(b), []).append(
            float(r["latency_us"]))
    return medians(bins, 12, 26, no_gaps)


def small_kernel(d):
    """bf16 rows with m = 1 and n, k in {128, 256}: the median of their latency_us_median (us) per GPU, the fixed
    cost of a kernel under CUDA-graph replay (decode_gemm_table.cc small_kernel_latency)."""
    by_gpu = {}
    for r in read(d, "gemm.csv"):
        if (r["dtype"] != "bf16" or r["m"] != "1" or r["n"] not in ("128", "256") or r["k"] not in ("128", "256")
                or not r["latency_us_median"]):
            continue
        by_gpu.setdefault(PROFILE[r["system"]], []).append(float(r["latency_us_median"]))
    return {gpu: statistics.median(v) for gpu, v in by_gpu.items()}


def floors_text(floors, aliases):
    """One {"profile", us} initialiser per line (3 decimals, the export's precision), alias copies after."""
    return "".join(f'    {{"{name}", {floors[gpu]:.3f}}},\n' for gpu in sorted(floors)
                   for name in [gpu] + aliases.get(gpu, []))


def integer(v):
    return str(round(v))


def four_digits(v):
    return "%.4g" % v  # the shared export's precision


def rows_text(table, fmt, aliases):
    """One C++ initialiser per row, sorted by profile then key (a (dtype, rows) key by dtype, then rows), alias copies after their measured profile; lines
    wrapped at 120 columns as clang-format (.clang-format) would."""
    lines = []
    for (gpu, second) in sorted(table, key=lambda k: (k[0], k[1] if isinstance(k[1], tuple) else str(k[1]))):
        if isinstance(second, tuple):  # (dtype, rows): decode_gemm_rows.inc
            second_text = f'"{second[0]}", {second[1]}'
        else:
            second_text = f'"{second}"' if isinstance(second, str) else str(second)
        body = "{" + ", ".join(fmt(v) for v in table[(gpu, second)]) + "}},"
        for name in [gpu] + aliases.get(gpu, []):
            head = f'    {{"{name}", {second_text},'
            line = head + " " + body
            lines.append(line if len(line) <= 120 else head + "\n     " + body)
    return "\n".join(lines) + "\n"


def main(argv):
    measured = argv[1] if len(argv) > 1 else "hwprofiles/measured"
    out = argv[2] if len(argv) > 2 else "modeler/serving"
    moe_bytes, moe_flops = moe_rows(measured)
    tables = [
        ("decode_gemm_rows.inc", "decode_gemm_table.cc", "gemm.csv.gz", decode_gemm(measured), integer, ALIASES),
        ("prefill_gemm_rows.inc", "prefill_gemm_table.cc", "gemm.csv.gz", prefill_gemm(measured), integer, ALIASES),
        ("decode_attention_rows.inc", "decode_attention_table.cc", "attention_decode.csv", decode_attention(measured),
         integer, ALIASES),
        ("moe_rows.inc", "moe_table.cc (kRows)", "moe.csv.gz", moe_bytes, integer, {}),
        ("moe_flop_rows.inc", "moe_table.cc (kFlopRows)", "moe.csv.gz", moe_flops, integer, {}),
        ("allreduce_rows.inc", "allreduce_table.cc", "custom_allreduce.csv", allreduce(measured), four_digits,
         ALLREDUCE_ALIASES),
    ]
    tables.append(("small_kernel_rows.inc", "decode_gemm_table.cc (small_kernel_latency)", "gemm.csv.gz",
                   small_kernel(measured), None, ALIASES))
    os.makedirs(out, exist_ok=True)
    for name, table_cc, source, table, fmt, aliases in tables:
        header = (f"// Generated by `python3 calibrate/serving_tables.py` (`make serving-tables`) from\n"
                  f"// hwprofiles/measured/serving/{source}, as {table_cc}'s header comment\n"
                  f"// derives it; do not edit.\n")
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(header + (floors_text(table, aliases) if fmt is None else rows_text(table, fmt, aliases)))


if __name__ == "__main__":
    main(sys.argv)

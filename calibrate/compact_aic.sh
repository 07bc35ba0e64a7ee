#!/bin/sh
# Copies the rows of the AIConfigurator measured-kernel export (../shared/data/measured_kernels, README there)
# that `shardplan calibrate import-aic` turns into the shipped tables into hwprofiles/measured/, unchanged
# (same columns, same values), so the tables regenerate without the shared data:
#   calibrate/compact_aic.sh [SRC_DIR] [DEST_DIR]
# Kept (the training-relevant part of AIC's grid; everything the fit reads):
#   gemm: the 7 training GPUs, dtypes bf16 fp8 fp8_block nvfp4, m in {128..32768} (powers of 2), n and k in
#         {128 256 512 1024 1536 2048 3072 4096 6144 8192 12288 16384 51200 65536};
#   attention_prefill: scope kernel, bf16 compute and KV, head_dim 128, seq_len >= 512;
#   nccl: kind nccl (nccl-tests), fp16.
# and, into DEST_DIR/serving/, exactly the rows calibrate/serving_tables.py derives the serving model's measured
# tables from (modeler/serving/*_table.cc; every GPU of the export; rows with an empty median are not used):
#   gemm.csv.gz: bf16 and fp8 with m < 128 and n*k*bytes >= 1 MiB (decode GEMMs: m 1, 4, 16 and the measured
#                17, 32, 33, 48, 64, 65, 80, 96, 112, on the same (n, k) shapes as m <= 16), bf16, fp8 and fp8_block with
#                m >= 128 and n, k >= 1024 (prefill GEMMs), bf16 with m = 1 and n, k in {128, 256} (the
#                small-kernel floor); gzip -9n (13.8 MB as text);
#   attention_decode.csv: window_size 0, head_dim 128, kv_heads 8, heads >= 32, KV bytes >= 64 KiB;
#   moe.csv.gz: distribution balanced, the formats shardplan has (not w4afp8), gated geometries (not top_k 22,
#               not 2688/1856/128/6);
#   custom_allreduce.csv: nccl.csv kind custom_allreduce, *_graph, bf16, one node, 4 KiB..64 MiB, NVLink GPUs.
set -eu
src=${1:-../shared/data/measured_kernels}
dst=${2:-hwprofiles/measured}
gpus='^(a100_sxm|h100_sxm|h200_sxm|b200_sxm|gb200|b300_sxm|gb300)$'
mkdir -p "$dst"
zcat "$src/gemm.csv.gz" | awk -F, -v gpus="$gpus" '
  NR == 1 { print; next }
  BEGIN { split("128 256 512 1024 2048 4096 8192 16384 32768", a, " "); for (i in a) M[a[i]] = 1
          split("128 256 512 1024 1536 2048 3072 4096 6144 8192 12288 16384 51200 65536", b, " ")
          for (i in b) NK[b[i]] = 1 }
  $1 ~ gpus && ($2 == "bf16" || $2 == "fp8" || $2 == "fp8_block" || $2 == "nvfp4") &&
    ($3 in M) && ($4 in NK) && ($5 in NK)' > "$dst/gemm.csv.tmp"
mv "$dst/gemm.csv.tmp" "$dst/gemm.csv"
zcat "$src/attention_prefill.csv.gz" | awk -F, -v gpus="$gpus" '
  NR == 1 { print; next }
  $1 ~ gpus && $2 == "kernel" && $3 == "bf16" && $4 == "bf16" && $9 == 128 && $6 >= 512' \
  > "$dst/attention_prefill.csv.tmp"
mv "$dst/attention_prefill.csv.tmp" "$dst/attention_prefill.csv"
awk -F, -v gpus="$gpus" 'NR == 1 { print; next } $1 == "nccl" && $2 ~ gpus && $7 == "fp16"' "$src/nccl.csv" \
  > "$dst/nccl.csv.tmp"
mv "$dst/nccl.csv.tmp" "$dst/nccl.csv"

mkdir -p "$dst/serving"
zcat "$src/gemm.csv.gz" | awk -F, '
  NR == 1 { print; next }
  $8 == "" { next }
  (($2 == "bf16" || $2 == "fp8") && $3 < 128 && $4 * $5 * ($2 == "bf16" ? 2 : 1) >= 1048576) ||
  ($2 == "bf16" && $3 == 1 && ($4 == 128 || $4 == 256) && ($5 == 128 || $5 == 256)) ||
  (($2 == "bf16" || $2 == "fp8" || $2 == "fp8_block") && $3 >= 128 && $4 >= 1024 && $5 >= 1024)' |
  gzip -9n > "$dst/serving/gemm.csv.gz.tmp"
mv "$dst/serving/gemm.csv.gz.tmp" "$dst/serving/gemm.csv.gz"
zcat "$src/attention_decode.csv.gz" | awk -F, '
  NR == 1 { print; next }
  $10 == 0 && $9 == 128 && $8 == 8 && $7 >= 32 && $13 != "" &&
    $5 * ($6 + 1) * 8 * 128 * 2 * ($4 == "bf16" ? 2 : 1) >= 65536' \
  > "$dst/serving/attention_decode.csv.tmp"
mv "$dst/serving/attention_decode.csv.tmp" "$dst/serving/attention_decode.csv"
zcat "$src/moe.csv.gz" | awk -F, '
  NR == 1 { print; next }
  $10 == "balanced" && $13 != "" && $2 != "w4afp8" && $7 != 22 && !($4 == 2688 && $5 == 1856 && $6 == 128 && $7 == 6)' |
  gzip -9n > "$dst/serving/moe.csv.gz.tmp"
mv "$dst/serving/moe.csv.gz.tmp" "$dst/serving/moe.csv.gz"
awk -F, -v gpus="$gpus" 'NR == 1 { print; next }
  $1 == "custom_allreduce" && $2 ~ gpus && $4 ~ /_graph$/ && $7 == "bf16" && $6 == 1 && $8 >= 4096 && $8 <= 67108864 &&
  $18 != ""' "$src/nccl.csv" > "$dst/serving/custom_allreduce.csv.tmp"
mv "$dst/serving/custom_allreduce.csv.tmp" "$dst/serving/custom_allreduce.csv"

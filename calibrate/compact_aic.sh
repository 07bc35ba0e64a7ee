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

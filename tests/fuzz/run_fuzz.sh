#!/usr/bin/env bash
# Replays a fuzz target's committed corpus (each input must pass), then fuzzes for SECONDS into a scratch copy so
# that the committed corpus only changes by hand (docs/fuzzing.md). A crash leaves its input in WORK/crash-*.
# The exploration uses libFuzzer's -seed=SHARDPLAN_FUZZ_SEED (default 1), so a CI run explores the same inputs in
# the same order every time and a slower machine explores a prefix of them: CI fails on a change, not on the
# luck of a random seed. SHARDPLAN_FUZZ_SEED=0 draws a random seed (long campaigns, docs/fuzzing.md).
# usage: run_fuzz.sh FUZZER CORPUS_DIR WORK_DIR SECONDS
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 seconds=$4 seed=${SHARDPLAN_FUZZ_SEED:-1}
rm -rf "$work" && mkdir -p "$work/corpus"
"$fuzzer" "$corpus"/*  # each committed input once: the regressions stay fixed
[ "$seconds" -gt 0 ] || exit 0
cp "$corpus"/* "$work/corpus/"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -seed="$seed" -artifact_prefix="$work/" "$work/corpus"

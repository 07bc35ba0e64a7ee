#!/usr/bin/env bash
# End-to-end calibration without a GPU: the MPI collective benchmark runs for real on 4 local ranks, its JSON lines
# go through `shardplan calibrate fit` into a profile inheriting dgx-h100, and `shardplan predict` uses it.
# Usage: mpi_e2e.sh SHARDPLAN_BIN MPI_BENCH_BIN MPIEXEC WORKDIR
set -euo pipefail
# A failing step names its line and the command, and shows what the step wrote (stderr files under $work), so a
# failure in CI (e.g. an mpiexec that could not start its ranks on a loaded machine) can be told from a regression.
trap 'rc=$?; echo "mpi_e2e.sh: line $LINENO failed (exit $rc): $BASH_COMMAND" >&2; tail -n 20 "$work"/*.txt >&2 2>/dev/null || true' ERR
shardplan=$1 bench=$2 mpiexec=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
# In the sanitizer build (tests/sanitizers/env.sh) the ranks unwind each allocation fully: Open MPI is built without
# frame pointers, so the fast unwinder leaves LeakSanitizer one-frame stacks inside components that MPI_Finalize
# has already unloaded, which no suppression can name; full stacks reach Open MPI's libraries in lsan.supp.
mpi() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0" "$mpiexec" "$@"; }
# Running as root is allowed in CI containers; --oversubscribe lets 4 ranks share 2 cores.
mpi --allow-run-as-root --oversubscribe -np 4 "$bench" --max-bytes 256K --min-bytes 1K --factor 4 \
  --reps 3 --warmup 2 > "$work/raw.jsonl"
# A bad sweep is a usage error (exit 2) with the flag named, not a silent default.
expect_usage_error() {
  local want=$1
  shift
  if mpi --allow-run-as-root --oversubscribe -np 1 "$bench" "$@" > /dev/null 2> "$work/bad.txt"; then
    echo "accepted $*" >&2
    exit 1
  fi
  grep -qF -- "$want" "$work/bad.txt"
}
expect_usage_error "--factor: expected a size multiplier above 1, got 1" --factor 1
expect_usage_error "--min-bytes (4096) must be at least 1 and at most --max-bytes (1024)" --min-bytes 4K --max-bytes 1K
rows=$(grep -c '"record":"result"' "$work/raw.jsonl")
echo "measured $rows rows"
test "$rows" -gt 20
# Host buffers are not the base's H100s, and the flat MPI ring on shared cores is not what the predictor models:
# the fit is refused (exit 2) with both reasons, and nothing is written (issue 12: calibration refuses the
# impossible).
set +e
"$shardplan" calibrate fit "$work/raw.jsonl" --base dgx-h100 --out "$work/p.yaml" > "$work/refused.txt" 2>&1
rc=$?
set -e
test "$rc" -eq 2 || { echo "host-buffer fit into dgx-h100: exit $rc, want 2" >&2; exit 1; }
grep -qF "raw.jsonl:1: measured on 'none (host buffers)' (not a GPU)" "$work/refused.txt"
grep -qF "pass --accept-anyway" "$work/refused.txt"
test ! -e "$work/p.yaml"
# --accept-anyway writes it, and says so in the provenance.
"$shardplan" calibrate fit "$work/raw.jsonl" --base dgx-h100 --out "$work/p.yaml" --accept-anyway
grep -q '^inherits: dgx-h100' "$work/p.yaml"
grep -q 'ACCEPTED WITH --accept-anyway DESPITE' "$work/p.yaml"
# A second fit to the same file must refuse to overwrite it (exit 2) and leave it intact.
if "$shardplan" calibrate fit "$work/raw.jsonl" --base dgx-h100 --out "$work/p.yaml" \
  --accept-anyway 2> "$work/err.txt"; then
  echo "overwrote without --force" >&2
  exit 1
fi
grep -q "file exists; pass --force" "$work/err.txt"
"$shardplan" profile diff dgx-h100 "$work/p.yaml" | tail -1
# The profile drives predict and validate (runs on its GPU take its tables).
"$shardplan" predict --model llama-3-8b --system "$work/p.yaml" --gpus 8 --tp 8 --pp 1 --dp 1 --mbs 1 --gbs 8 \
  --seq 8192 | tail -1
"$shardplan" validate --runs "$(dirname "$0")/../validation/published_runs.yaml" --system "$work/p.yaml" | tail -1

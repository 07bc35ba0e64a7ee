# shardplan validate: per-run table, per-source summary and the contract's summary line last.
source "$(dirname "$0")/lib.sh"

awk '/^- id:/ {n++} n <= 3' "$SRC/tests/validation/published_runs.yaml" >"$tmp/few.yaml"
out=$("$BIN" validate --runs "$tmp/few.yaml")
last=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)
if [[ "$last" =~ ^throughput\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs\;\ memory\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs$ ]]; then
  echo "ok: summary line: $last"
else
  echo "FAIL: last line: $last"; fails=$((fails + 1))
fi
expect 0 "mcore080_h100_weak_1.7b" -- "$BIN" validate --runs "$tmp/few.yaml"
"$BIN" validate --runs "$tmp/few.yaml" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["summary"]["throughput"]["runs"] >= 1' \
  && echo "ok: validate --json" || { echo "FAIL: validate --json"; fails=$((fails + 1)); }

sed 's/  trust: high/  trusst: high/' "$tmp/few.yaml" >"$tmp/typo.yaml"
expect 2 "unknown key 'mcore080_h100_weak_1.7b.trusst', did you mean 'trust'?" -- "$BIN" validate --runs "$tmp/typo.yaml"
expect 2 "cannot open" -- "$BIN" validate --runs "$tmp/none.yaml"
finish

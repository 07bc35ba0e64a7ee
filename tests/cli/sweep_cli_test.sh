# shardplan sweep: table, CSV/JSON and SVG written atomically; predict --trace writes a Chrome trace.
source "$(dirname "$0")/lib.sh"

W=(sweep --model llama-3-8b --gpu h100-sxm5-80gb --gbs 64 --seq 4096 --quiet --tp 1,2 --recompute none,full)
expect 0 "best plan" -- "$BIN" "${W[@]}" --vary gpus --values 8:16 --out "$tmp/s.csv" --svg "$tmp/s.svg"
head -1 "$tmp/s.csv" | grep -q "^varied_gpus,gpus,fits,tp" && echo "ok: csv header" \
  || { echo "FAIL: csv header"; fails=$((fails + 1)); }
[ "$(wc -l <"$tmp/s.csv")" -eq 3 ] && echo "ok: csv rows" || { echo "FAIL: csv rows"; fails=$((fails + 1)); }
python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$tmp/s.svg" && echo "ok: svg parses" \
  || { echo "FAIL: svg"; fails=$((fails + 1)); }
expect 2 "file exists" -- "$BIN" "${W[@]}" --vary gpus --values 8:16 --out "$tmp/s.csv"
expect 0 "" -- "$BIN" "${W[@]}" --gpus 8 --vary seq --values 2048,4096 --out "$tmp/s.json"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['vary']=='seq' and len(j['results'])==2" \
  "$tmp/s.json" \
  && echo "ok: sweep json" || { echo "FAIL: sweep json"; fails=$((fails + 1)); }
expect 2 "must end in .csv or .json" -- "$BIN" "${W[@]}" --gpus 8 --vary gbs --values 64 --out "$tmp/s.txt"

# predict --trace: Chrome trace JSON with complete events per stage.
expect 0 "" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --tp 2 --pp 2 --vpp 2 --gbs 16 --seq 4096 \
  --trace "$tmp/t.json"
python3 - "$tmp/t.json" <<'PY' && echo "ok: trace" || { echo "FAIL: trace"; fails=$((fails + 1)); }
import json, sys
j = json.load(open(sys.argv[1]))
x = [e for e in j["traceEvents"] if e["ph"] == "X"]
assert x and all(e["dur"] >= 0 and "ts" in e for e in x)
assert {e["pid"] for e in x} == {0, 1}
PY
expect 2 "file exists" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 16 --seq 4096 \
  --trace "$tmp/t.json"
finish

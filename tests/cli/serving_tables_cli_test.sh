# The serving model's measured-kernel rows (modeler/serving/*_rows.inc) are calibration output: regenerating them
# from the in-repo measured rows (hwprofiles/measured/serving/) with calibrate/serving_tables.py (what
# `make serving-tables` runs) gives the committed include files byte for byte, and the script writes no others.
# Then its input errors: a missing measured file, and a bin the stated derivation has no rule for.
source "$(dirname "$0")/lib.sh"

cd "$SRC" || exit 1
gen="$SRC/calibrate/serving_tables.py"
if python3 "$gen" hwprofiles/measured "$tmp/inc" > "$tmp/gen.log" 2>&1; then echo "ok: serving_tables.py"; else
  echo "FAIL: serving_tables.py"; tail -5 "$tmp/gen.log"; fails=$((fails + 1))
fi
for f in "$tmp"/inc/*; do
  name=$(basename "$f")
  if cmp -s "$f" "modeler/serving/$name"; then echo "ok: $name regenerates"; else
    echo "FAIL: modeler/serving/$name differs from what calibrate/serving_tables.py produces (run make serving-tables)"
    diff "modeler/serving/$name" "$f" | head -5; fails=$((fails + 1))
  fi
done
[ "$(ls "$tmp/inc" | wc -l)" = "$(ls modeler/serving/*_rows.inc | wc -l)" ] && [ "$(ls "$tmp/inc" | wc -l)" = 7 ] || {
  echo "FAIL: serving_tables.py writes $(ls "$tmp/inc" | wc -l) files (7 expected), modeler/serving has" \
    "$(ls modeler/serving/*_rows.inc | wc -l)"
  fails=$((fails + 1)); }
# Every include file is included by the table it names (no stale generated file).
for f in modeler/serving/*_rows.inc; do
  grep -q "#include \"$f\"" modeler/serving/*_table.cc && echo "ok: $f included" || {
    echo "FAIL: no table includes $f"; fails=$((fails + 1)); }
done

mkdir -p "$tmp/empty"
expect 1 "empty/serving/moe.csv: missing" -- python3 "$gen" "$tmp/empty" "$tmp/out"
# One all-reduce size dropped from the measured rows: that bin is empty, and the derivation has no fill rule.
mkdir -p "$tmp/gap/serving"
cp hwprofiles/measured/serving/* "$tmp/gap/serving/"
grep -v ',all_reduce,[a-z_]*,2,1,bf16,65536,' hwprofiles/measured/serving/custom_allreduce.csv \
  > "$tmp/gap/serving/custom_allreduce.csv"
expect 1 "a100-sxm4-80gb 2: empty bin 2^16" -- python3 "$gen" "$tmp/gap" "$tmp/out"
finish

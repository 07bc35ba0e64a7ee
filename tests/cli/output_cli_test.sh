# Output you can pipe, files you cannot lose (issue 11 item 4, issue 12 item 4): --emit, --trace and sweep outputs
# go to standard output when --out is omitted or '-'; file destinations are checked before any work; links are
# written through, dangling links, directories refused; devices written into, never replaced.
source "$(dirname "$0")/lib.sh"

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
S=(search --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --quiet --top 1)

# --emit without --out, and with --out -: the emitted file alone on stdout (byte for byte what --out FILE writes),
# the report on stderr.
"$BIN" "${S[@]}" --emit megatron --out "$tmp/file.sh" > /dev/null 2>&1
for out in "" "--out -"; do
  # shellcheck disable=SC2086
  "$BIN" "${S[@]}" --emit megatron $out > "$tmp/stdout.sh" 2> "$tmp/stderr.txt"
  rc=$?
  [ $rc -eq 0 ] && ok "--emit megatron ${out:-(no --out)}: exit 0" || bad "--emit megatron $out: exit $rc"
  cmp -s "$tmp/stdout.sh" "$tmp/file.sh" && ok "stdout holds only the emitted file" \
    || bad "stdout is not the file alone"
  grep -q "searched" "$tmp/stderr.txt" && ok "the report went to stderr" || bad "report missing on stderr"
done
[ ! -e ./- ] && [ ! -e "$tmp/-" ] && ok "no file named '-'" || bad "a file named '-' was created"
"$BIN" "${S[@]}" --emit json 2>/dev/null | python3 -c "import json,sys; json.load(sys.stdin)" \
  && ok "--emit json pipes into a parser" \
  || bad "--emit json to stdout does not parse"
expect 2 "would both write to standard output" -- "$BIN" "${S[@]}" --emit json --json

# Destinations are checked before the search: the refusal comes without a search report.
echo keep > "$tmp/exists.sh"
for dest in "$tmp/exists.sh" "$tmp/no/such/dir/x.sh" "$tmp"; do
  out=$("$BIN" "${S[@]}" --emit megatron --out "$dest" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && ! grep -q "searched" <<<"$out" && ok "refused before searching: $dest ($(tail -1 <<<"$out"))" \
    || bad "$dest: exit $rc, or the search ran first: $out"
done
grep -qx keep "$tmp/exists.sh" && ok "the existing file is intact" || bad "existing file changed"
expect 2 "directory $tmp/no/such/dir does not exist" -- "$BIN" "${S[@]}" --emit json --out "$tmp/no/such/dir/x.json"
expect 2 "is a directory" -- "$BIN" "${S[@]}" --emit json --out "$tmp" --force

# A symbolic link is written through to its target (with --force), the link itself stays; a dangling one is refused.
echo old > "$tmp/real.json"
ln -s real.json "$tmp/link.json"
expect 2 "(a symbolic link to" -- "$BIN" "${S[@]}" --emit json --out "$tmp/link.json"
expect 0 "wrote json plan" -- "$BIN" "${S[@]}" --emit json --out "$tmp/link.json" --force
[ -L "$tmp/link.json" ] && [ "$(readlink "$tmp/link.json")" = real.json ] && grep -q schema_version "$tmp/real.json" \
  && ok "link kept, target written" || bad "link replaced or target not written"
ln -s nowhere.json "$tmp/dangling.json"
expect 2 "which does not exist" -- "$BIN" "${S[@]}" --emit json --out "$tmp/dangling.json" --force
[ ! -e "$tmp/nowhere.json" ] && [ -L "$tmp/dangling.json" ] && ok "nothing created through a dangling link" \
  || bad "dangling link followed or replaced"

# Devices: /dev/stdout is the open descriptor (even as root with --force it is not replaced), /dev/null a sink.
before=$(stat -c %F /dev/stdout 2>/dev/null; stat -L -c %F /dev/null)
"$BIN" "${S[@]}" --emit json --out /dev/stdout --force 2>/dev/null \
  | python3 -c "import json,sys; json.load(sys.stdin)" \
  && ok "--out /dev/stdout --force writes to the pipe" || bad "--out /dev/stdout"
"$BIN" "${S[@]}" --emit json --out /dev/stdout --force > "$tmp/redirected.json" 2>/dev/null
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/redirected.json" && ok "--out /dev/stdout > file" \
  || bad "--out /dev/stdout redirected to a file"
expect 0 "wrote json plan" -- "$BIN" "${S[@]}" --emit json --out /dev/null --force
after=$(stat -c %F /dev/stdout 2>/dev/null; stat -L -c %F /dev/null)
[ "$before" = "$after" ] && [ -c /dev/null ] && ok "/dev/stdout and /dev/null are what they were" \
  || bad "a device was replaced: $before -> $after"
mkfifo "$tmp/fifo"
cat "$tmp/fifo" > "$tmp/from_fifo.json" &
"$BIN" "${S[@]}" --emit json --out "$tmp/fifo" > /dev/null 2>&1
wait
[ -p "$tmp/fifo" ] && grep -q schema_version "$tmp/from_fifo.json" && ok "a FIFO is written into, not replaced" \
  || bad "FIFO"

# predict --trace -: the trace on stdout, the report on stderr; checked before work.
P=(predict --model llama-3-8b --system dgx-h100 --gpus 8 --tp 8 --pp 1 --dp 1 --mbs 1 --gbs 8 --seq 4096)
"$BIN" "${P[@]}" --trace - 2> "$tmp/p_err.txt" | python3 -c \
  "import json,sys; j=json.load(sys.stdin); assert j['traceEvents']" \
  && grep -q "shardplan predict" "$tmp/p_err.txt" && ok "predict --trace - pipes the trace" || bad "predict --trace -"
expect 2 "would both write to standard output" -- "$BIN" "${P[@]}" --trace - --json
out=$("$BIN" "${P[@]}" --trace "$tmp/exists.sh" 2>&1)
[ $? -eq 2 ] && ! grep -q "shardplan predict" <<<"$out" && ok "predict --trace refuses before predicting" \
  || bad "predict --trace existing: $out"

# sweep --out - (CSV, or --format json) and --svg -.
W=(sweep --model llama-3-8b --gpu h100-sxm5-80gb --gbs 64 --seq 4096 --quiet --tp 1,2 --recompute none --vary gpus \
  --values 8)
"$BIN" "${W[@]}" --out - 2> "$tmp/w_err.txt" > "$tmp/w.csv"
head -1 "$tmp/w.csv" | grep -q "^varied_gpus,gpus,fits" && [ "$(wc -l < "$tmp/w.csv")" -eq 2 ] \
  && grep -q "best plan" "$tmp/w_err.txt" && ok "sweep --out - is CSV on stdout" || bad "sweep --out -"
"$BIN" "${W[@]}" --out - --format json 2>/dev/null | python3 -c \
  "import json,sys; assert json.load(sys.stdin)['vary']=='gpus'" \
  && ok "sweep --out - --format json" || bad "sweep --format json"
"$BIN" "${W[@]}" --svg - 2>/dev/null | python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.stdin)" \
  && ok "sweep --svg - is SVG on stdout" || bad "sweep --svg -"
expect 2 "would both write to standard output" -- "$BIN" "${W[@]}" --out - --svg -
expect 2 "--format goes with --out" -- "$BIN" "${W[@]}" --format csv
out=$("$BIN" "${W[@]}" --out "$tmp/exists.sh" --format csv 2>&1)
[ $? -eq 2 ] && ! grep -q "best plan" <<<"$out" && ok "sweep refuses before sweeping" || bad "sweep existing: $out"

ls -a "$tmp" | grep -q '\.tmp' && bad "temp file left"
finish

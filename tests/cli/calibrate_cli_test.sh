# shardplan calibrate: imports of nccl-tests logs as users capture them, refusals of impossible calibrations
# (issue 12 item 5), the profile's file promises and the resume of `calibrate run` (item 4). No GPU needed.
source "$(dirname "$0")/lib.sh"

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
D="$SRC/tests/data/nccl_tests_captured"
# A sample of tests/data/nccl_tests_samples.txt as a log file.
sample() { awk -v n="$1" '$0 ~ "^=== BEGIN SAMPLE "n"( |$)"{f=1;next} /^=== END SAMPLE/{f=0} f' \
  "$SRC/tests/data/nccl_tests_samples.txt"; }
sample 1 > "$tmp/two_nodes.log"   # 2 nodes x 8 H100, all_reduce over 16 ranks
sample 3 > "$tmp/sendrecv.log"    # 8 A100, sendrecv, no device list
I=(calibrate import-nccl-tests)

# The two-node all-reduce is inferred to measure the network tier, and refused: it would be 547% of line rate.
expect 2 "547.1% of the tier's line rate 50.00 GB/s per GPU" -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-h100 \
  --out "$tmp/p.yaml"
expect 2 "16 ranks on 2 hosts (ztan-mig-235z, ztan-mig-gq73): tier infiniband of dgx-h100 (inferred" -- \
  "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-h100 --out "$tmp/p.yaml"
expect 2 "547.1% of the tier's line rate" -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-h100 --tier infiniband \
  --out "$tmp/p.yaml"
# A link far too slow to be the tier (every time x 1e8: ~2e-6 GB/s) fits cleanly but is refused: below 1% of line rate.
awk '$1 ~ /^[0-9]+$/ { $6 *= 1e8; $7 /= 1e8; $8 /= 1e8; $10 *= 1e8; $11 /= 1e8; $12 /= 1e8 } 1' "$tmp/sendrecv.log" \
  > "$tmp/slow.log"
expect 2 "of the tier's line rate 300.00 GB/s per GPU, below the 1.0% a working link reaches" -- \
  "$BIN" "${I[@]}" "$tmp/slow.log" --base dgx-a100 --tier nvlink --ranks 8 --out "$tmp/slow.yaml"
[ ! -e "$tmp/slow.yaml" ] && ok "slow link: nothing written" || bad "a profile of a 2e-6 GB/s link was written"
# A time nccl-tests never prints (1e999: strtod's infinity; the fuzz finding) refuses its run, nothing written.
expect 2 "finding_overflowing_time.txt:1: the run: line 6 has \"1e999\" where a finite, non-negative number belongs" \
  -- "$BIN" "${I[@]}" "$SRC/tests/fuzz/corpus/nccl_tests_log/finding_overflowing_time.txt" --base dgx-h100 \
  --tier nvlink --out "$tmp/inf.yaml"
[ ! -e "$tmp/inf.yaml" ] && ok "infinite time: nothing written" || bad "a profile from an infinite time was written"
# Hosts that do not match --tier; a GPU that is not the base's.
want="two_nodes.log:12: all_reduce_perf ran 16 ranks on 2 hosts (ztan-mig-235z, ztan-mig-gq73), a group that uses tier"
want+=" 'infiniband' of dgx-h100, not --tier 'nvlink'"
expect 2 "$want" \
  -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-h100 --tier nvlink --out "$tmp/p.yaml"
expect 2 "two_nodes.log:12: measured on 'NVIDIA H100 80GB HBM3', but the base cluster 'dgx-a100' has a100-sxm4-80gb" \
  -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-a100 --out "$tmp/p.yaml"
expect 2 "pass --accept-anyway" -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-a100 --out "$tmp/p.yaml"
[ ! -e "$tmp/p.yaml" ] && ok "nothing written on refusal" || bad "a refused profile was written"
# The rare real case: --accept-anyway writes it and records why in the provenance.
expect 0 "wrote $tmp/p.yaml" -- "$BIN" "${I[@]}" "$tmp/two_nodes.log" --base dgx-h100 --out "$tmp/p.yaml" \
  --accept-anyway
grep -q "ACCEPTED WITH --accept-anyway DESPITE: tier infiniband: the measured bus bandwidth" "$tmp/p.yaml" \
  && ok "provenance records --accept-anyway" || bad "provenance lacks --accept-anyway"
expect 0 "throughput:" -- "$BIN" predict --model llama-3-8b --system "$tmp/p.yaml" --gpus 16 --tp 8 --pp 1 --dp 2 \
  --mbs 1 --gbs 16 --seq 4096

# Logs as captured: mpirun --tag-output with interleaved NCCL INFO lines and CRLF; srun --label with two runs.
want="tagged_crlf.log:6: all_reduce_perf, 2 ranks on 2 hosts (node-a, node-b): tier infiniband of dgx-h100"
want+=" (inferred; --tier overrides)"
expect 0 "$want" \
  -- "$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --out "$tmp/tagged.yaml"
grep -q "^inherits: dgx-h100" "$tmp/tagged.yaml" && ok "tagged log profile written" || bad "tagged profile"
expect 0 "srun_label.log:35: all_gather_perf, 2 ranks on 2 hosts" -- "$BIN" "${I[@]}" "$D/srun_label.log" \
  --base dgx-h100 --out "$tmp/srun.yaml"
expect 0 "wrote" -- "$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --tier infiniband --out "$tmp/tagged2.yaml"
expect 2 "measurements of different GPUs in one fit: 'NVIDIA H100 80GB HBM3' (" \
  -- "$BIN" "${I[@]}" "$D/mixed_gpus.log" \
  --base dgx-h100 --out "$tmp/m.yaml"
expect 2 "independent_ranks.log:5: all_reduce_perf run: ran on a single rank" -- "$BIN" "${I[@]}" \
  "$D/independent_ranks.log" --base dgx-h100 --out "$tmp/i.yaml"
# No device list: the tier cannot be inferred; with --tier and --ranks the valid A100 sendrecv log imports.
expect 2 "sendrecv.log:7: sendrecv_perf run: the log names no hosts, so its tier cannot be inferred; pass --tier NAME" \
  -- "$BIN" "${I[@]}" "$tmp/sendrecv.log" --base dgx-a100 --ranks 8 --out "$tmp/s.yaml"
expect 0 "wrote $tmp/s.yaml" -- "$BIN" "${I[@]}" "$tmp/sendrecv.log" --base dgx-a100 --ranks 8 --tier nvlink \
  --out "$tmp/s.yaml"
# A 30,000-character word (was a std::regex stack overflow, a signal): an input error naming the file.
head -c 30000 /dev/zero | tr '\0' a > "$tmp/word.log"
echo >> "$tmp/word.log"
expect 2 "no nccl-tests data rows in word.log" -- "$BIN" "${I[@]}" "$tmp/word.log" --base dgx-h100 --tier nvlink \
  --out "$tmp/w.yaml"

# The profile destination is checked before reading anything; links and devices follow the one writer's rules.
echo keep > "$tmp/exists.yaml"
out=$("$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --out "$tmp/exists.yaml" 2>&1)
[ $? -eq 2 ] && grep -q "file exists; pass --force" <<<"$out" && ! grep -q "fit residuals" <<<"$out" \
  && ok "existing profile refused before fitting" || bad "existing profile: $out"
grep -qx keep "$tmp/exists.yaml" && ok "existing profile intact" || bad "existing profile changed"
ln -s gone.yaml "$tmp/dangling.yaml"
expect 2 "which does not exist" -- "$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --out "$tmp/dangling.yaml" \
  --force
[ ! -e "$tmp/gone.yaml" ] && ok "no profile created through a dangling link" || bad "dangling link followed"
expect 2 "a calibrated profile needs a file name" -- "$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --out -
expect 2 "is a directory" -- "$BIN" "${I[@]}" "$D/tagged_crlf.log" --base dgx-h100 --out "$tmp" --force

# The AIC import and the GPU-tables fit check their destinations first too (one writer for every file).
expect 2 "$tmp/exists.yaml: file exists; pass --force" -- "$BIN" calibrate import-aic "$SRC/hwprofiles/measured" \
  --gpu h100-sxm5-80gb --out "$tmp/exists.yaml"
expect 2 "which does not exist" -- "$BIN" calibrate import-aic "$SRC/hwprofiles/measured" --gpu h100-sxm5-80gb \
  --out "$tmp/dangling.yaml" --force

# calibrate fit: JSON lines of another GPU are refused, naming the file and line of the context record.
{
  echo '{"record":"context","benchmark":"memory","backend":"cuda","gpu":"NVIDIA H100 80GB HBM3"}'
  for b in 1048576 16777216 268435456 1073741824; do
    t=$(python3 -c "print(4e-6 + $b / 3.0e12)")
    printf '%s%s\n' '{"record":"result","benchmark":"memory","backend":"cuda","params":{"op":"copy","bytes":'"$b"'},' \
      '"bytes":'"$b"',"time_s":'"$t"',"wrong":0}'
  done
} > "$tmp/h100.jsonl"
expect 2 "h100.jsonl:1: measured on 'NVIDIA H100 80GB HBM3', but the base cluster 'dgx-a100' has a100-sxm4-80gb" -- \
  "$BIN" calibrate fit "$tmp/h100.jsonl" --base dgx-a100 --out "$tmp/f.yaml"
expect 0 "wrote $tmp/f.yaml" -- "$BIN" calibrate fit "$tmp/h100.jsonl" --base dgx-h100 --out "$tmp/f.yaml"

# calibrate run resumes after a partial last line: trimmed (and said so), the next record on its own line.
mkdir -p "$tmp/bench"
cat > "$tmp/bench/shardplan_bench_memory" <<'SH'
#!/bin/sh
printf '%s%s\n' '{"record":"result","benchmark":"memory","backend":"cuda","params":{"op":"triad","bytes":1024},' \
  '"bytes":1024,"time_s":1e-5,"wrong":0}'
SH
chmod +x "$tmp/bench/shardplan_bench_memory"
printf '%s\n%s' '{"record":"context","benchmark":"memory"}' '{"record":"result","bench' > "$tmp/raw.jsonl"
expect 0 "ended in a partial line (25 bytes, cut by an interrupted run); removed it before appending" -- \
  "$BIN" calibrate run --benchmarks memory --bench-dir "$tmp/bench" --out "$tmp/raw.jsonl"
[ "$(wc -l < "$tmp/raw.jsonl")" -eq 2 ] && tail -1 "$tmp/raw.jsonl" | grep -q \
  '^{"record":"result","benchmark":"memory"' \
  && ok "resumed file holds whole lines" || bad "resumed file: $(cat "$tmp/raw.jsonl")"
expect 2 "not a regular file" -- "$BIN" calibrate run --benchmarks memory --bench-dir "$tmp/bench" --out /dev/null

ls -a "$tmp" | grep -q '\.tmp' && bad "temp file left"
finish

# Issue 12's reproducers through the CLI: each exits 2 with a message naming the input, never a signal or
# "internal error". The input files are the fuzz corpus's regression inputs (tests/fuzz/corpus/*/finding_*).
source "$(dirname "$0")/lib.sh"
F=$SRC/tests/fuzz/corpus
P=(predict --model llama-3-8b --system dgx-h100)

# Signals before: SIGFPE from int overflow, then division by zero; the search's worker threads aborting.
expect 2 "tp x pp x cp (4294967296) must be at most 2^24 GPUs" -- "$BIN" "${P[@]}" --tp 65536 --pp 65536
expect 2 "micro_batch x dp (65536 x 65536) does not divide global_batch (4)" -- \
  "$BIN" "${P[@]}" --gpus 65536 --mbs 65536 --gbs 4
expect 2 "plan: pp x vpp (65536 x 65536) must be at most 2^24" -- "$BIN" validate \
  --runs "$F/published_runs/finding_pp_vpp_65536.yaml"
# V100 (no bf16 peak) is evaluated at its fp16 peak since the measured-tables merge; its search used to abort.
expect 0 "mbs1 none fp16" -- "$BIN" search --model llama-3-8b --gpu v100-sxm3-32gb --gpus 8 --gbs 64 --seq 2048 \
  --precision fp16
expect 2 "out of memory" -- "$BIN" predict --model llama-3-8b --gpu v100-sxm3-32gb --gpus 8 --precision fp16

# "internal error" before: yaml-cpp conversions, nlohmann out_of_range and type errors, an invariant.
expect 2 "finding_nonscalar_key.yaml:20: expected a plain key, got a list" -- \
  "$BIN" predict --model "$F/model_yaml/finding_nonscalar_key.yaml" --system dgx-h100
expect 2 "finding_nonscalar_key.yaml:5: expected a plain key, got a list" -- \
  "$BIN" predict --model llama-3-8b --system "$F/system_yaml/finding_nonscalar_key.yaml"
expect 2 "finding_gpu_overrides_nonscalar_key.yaml:6: gpu_overrides: expected a plain key, got a list" -- \
  "$BIN" predict --model llama-3-8b --system "$F/system_yaml/finding_gpu_overrides_nonscalar_key.yaml"
expect 2 "expected a plain key, got a list" -- "$BIN" validate --runs "$F/published_runs/finding_nonscalar_key.yaml"
mkdir -p "$tmp/rope" && cp "$F/hf_config/finding_rope_theta_1e400.json" "$tmp/rope/config.json"
expect 2 "config.json:21: rope_theta: number 1e400 is out of range" -- \
  "$BIN" predict --model "$tmp/rope/config.json" --system dgx-h100
expect 2 "finding_record_5.jsonl:1: record: expected a string, got 5" -- \
  "$BIN" calibrate fit "$F/calibration_jsonl/finding_record_5.jsonl" --base dgx-h100 --out "$tmp/p.yaml"
expect 2 "finding_stride_string.jsonl:1: stride: expected a number, got \"2\"" -- \
  "$BIN" calibrate fit "$F/calibration_jsonl/finding_stride_string.jsonl" --base dgx-h100 --out "$tmp/p.yaml"
# A plan file with a number beyond double's range (fuzz_plan_json).
expect 2 "finding_number_1e7162947142:49: bubble_s: number 0.11528E7162947142 is out of range" -- \
  "$BIN" predict --plan "$F/plan_json/finding_number_1e7162947142"
# A DeepSpeed config print with "bf16": {"enabled": null} (fuzz_training_log; the first byte picks the framework).
tail -c +2 "$F/training_log/finding_deepspeed_enabled_null" > "$tmp/ds_null.log"
expect 2 "ds_null.log:44: bf16.enabled: expected true or false, got null" -- \
  "$BIN" calibrate import-log "$tmp/ds_null.log" --framework deepspeed --system dgx-h100 --gpus 8 --seq 4096
expect 2 "--nic-gbps: must be a number in [0.1, 1e+06], got '1e-308'" -- \
  "$BIN" predict --model llama-3-8b --gpu h100-sxm5-80gb --gpus 16 --nic-gbps 1e-308
expect 2 "--vpp: '1:16777216:1' lists 16777216 values, more than 4096" -- \
  "$BIN" search --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --vpp 1:16777216:1

# Garbage printed before: negative batches, a negative wattage, a negative count, nan times, head_dim 0.
expect 2 "the default global batch dp x mbs (8 x 2147483647) must be at most 2^24 sequences; give --gbs" -- \
  "$BIN" "${P[@]}" --mbs 2147483647 --json
expect 2 "micro_batch (2147483647) and global_batch (64) must be at most 2^24 sequences" -- \
  "$BIN" "${P[@]}" --mbs 2147483647 --gbs 64
expect 2 "--power-limit-w: must be a number in [1, 100000], got '1e300'" -- "$BIN" "${P[@]}" --power-limit-w 1e300
expect 2 "produced 1e+300 wrong results" -- \
  "$BIN" calibrate fit "$F/calibration_jsonl/finding_wrong_1e300.jsonl" --base dgx-h100 --out "$tmp/p.yaml"
printf '1024,inf,1024\n' >"$tmp/inf.txt"
expect 2 "inf.txt:1: expected m,n,k (integers from 1 to 2^31 - 1), got '1024,inf,1024'" -- \
  "$BIN" profile gemm dgx-h100 --shapes "$tmp/inf.txt"
printf 'nan,1,1\n' >"$tmp/nan.txt"
expect 2 "nan.txt:1: expected m,n,k" -- "$BIN" profile gemm dgx-h100 --shapes "$tmp/nan.txt"
expect 2 "model.heads: hidden / heads (8 / 32) leaves no head dimension; give head_dim" -- \
  "$BIN" validate --runs "$F/published_runs/finding_head_dim_0.yaml"
# Valid inputs at the edge still work.
expect 0 "tokens/s" -- "$BIN" predict --model llama-3-8b --gpu h100-sxm5-80gb --gpus 16 --nic-gbps 0.1

# A newline in a user string (here the --model path) stays inside the launch file's header comment, escaped.
nl_dir="$tmp/a
rm -rf x"
mkdir -p "$nl_dir" && cp "$SRC/models/llama-3-8b.yaml" "$nl_dir/"
expect 0 "wrote" -- "$BIN" search --model "$nl_dir/llama-3-8b.yaml" --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 \
  --quiet --top 1 --emit megatron --out "$tmp/nl.sh"
grep -qF "plan for $tmp/a\nrm -rf x/llama-3-8b.yaml on 8 x" "$tmp/nl.sh" && ! grep -q "^rm -rf" "$tmp/nl.sh" \
  && bash -n "$tmp/nl.sh" && echo "ok: the newline is escaped in the header" \
  || { echo "FAIL: newline in --model reached the script: $(head -3 "$tmp/nl.sh")"; fails=$((fails + 1)); }

# stdout closed early (`shardplan search ... | head -1`): no signal, no message, the command's own status. The pipe's
# read end is closed before shardplan starts, so its first write fails (no race with the reader).
closed_stdout() {
  python3 - "$@" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, restore_signals=True)
print("rc", p.returncode, "stderr", repr(p.stderr.decode()))
PY
}
S=(search --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096)
expect 0 "rc 0 stderr ''" -- closed_stdout "$BIN" "${S[@]}" --quiet
expect 0 "rc 0 stderr ''" -- closed_stdout "$BIN" --help
expect 0 "rc 2 stderr \"error: --gpus: '0x' is not a positive integer" -- closed_stdout "$BIN" search \
  --model llama-3-8b --system dgx-h100 --gpus 0x
out=$("$BIN" "${S[@]}" 2>"$tmp/pipe.err" | head -1; echo "status ${PIPESTATUS[0]}")
grep -q "status 0" <<<"$out" && [ ! -s "$tmp/pipe.err" ] && echo "ok: search | head -1" \
  || { echo "FAIL: search | head -1: $out $(cat "$tmp/pipe.err")"; fails=$((fails + 1)); }
# Any other failed write loses output: an error, exit 1.
to_full() { "$@" >/dev/full; }
expect 1 "error: could not write standard output" -- \
  to_full "$BIN" "${S[@]}" --quiet
finish

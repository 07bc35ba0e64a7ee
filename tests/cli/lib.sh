# Helpers for CLI tests: run a command, check its exit code and that its output contains a string.
BIN=$1
SRC=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE "needle" -- command...: runs the command, checks exit code and that stdout+stderr contain needle.
expect() {
  local code=$1 needle=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$code" ]; then
    echo "FAIL: exit $rc (want $code): $*"; echo "$out" | tail -5; fails=$((fails + 1)); return
  fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    echo "FAIL: output lacks '$needle': $*"; echo "$out" | tail -5; fails=$((fails + 1)); return
  fi
  echo "ok: $*"
}

finish() {
  [ "$fails" -eq 0 ] && echo "all passed" && exit 0
  echo "$fails failed"; exit 1
}

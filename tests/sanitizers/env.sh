# The sanitizer runtime options the sanitizer build's tests run under (.ci/run, docs/fuzzing.md):
#   source tests/sanitizers/env.sh   (from the repository root)
# A leak, a bad access or undefined behaviour aborts the test that hit it; LeakSanitizer skips only the Open MPI
# allocations named in lsan.supp.
_shardplan_sanitizers=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$_shardplan_sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
unset _shardplan_sanitizers

#!/usr/bin/env bash
# Builds one libFuzzer target per loader (PubTator, SemEval XML + relations, BRAN TSV,
# word2vec text and binary) with clang++ -fsanitize=fuzzer,address,undefined into
# build-fuzz/, and runs each on its committed seed corpus (tests/fuzz/corpus/<target>/)
# with a dictionary of the format's keywords (<target>.dict) for a bounded time. Exits
# non-zero on any crash, sanitizer report, uncaught exception other than a DataError,
# failed round-trip check, leak, timeout or out-of-memory.
#
#   tests/fuzz/run_fuzz.sh                 # 15 s per target
#   MARE_FUZZ_SECONDS=120 tests/fuzz/run_fuzz.sh
#
# Rule: the build uses only the loader sources of experiments/data (no generators; the
# SemEval XML through the system pugixml, not instrumented), at
# most 2 parallel compiles; new inputs found in a run go to build-fuzz/corpus/<target>/,
# never into the committed seeds.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/build-fuzz"
seconds="${MARE_FUZZ_SECONDS:-15}"
jobs="${MARE_FUZZ_JOBS:-2}"
cxx="${MARE_FUZZ_CXX:-}"
if [[ -z "$cxx" ]]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null 2>&1; then cxx="$c"; break; fi
  done
fi
if [[ -z "$cxx" ]]; then
  echo "run_fuzz.sh: clang++ not found (install clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi

sources=(error document tokenizer vocab pubtator semeval bran_tsv word2vec)
targets=(fuzz_pubtator fuzz_semeval fuzz_bran_tsv fuzz_word2vec_text fuzz_word2vec_binary)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -I"$root")

mkdir -p "$out/obj"
# Recompile a source when its object is missing or older than it or any data header.
newest_header="$(ls -t "$root"/experiments/data/*.h "$root"/tests/fuzz/*.h | head -n 1)"
stale=()
for s in "${sources[@]}"; do
  o="$out/obj/$s.o"
  if [[ ! -f "$o" || "$root/experiments/data/$s.cpp" -nt "$o" || "$newest_header" -nt "$o" ]]; then
    stale+=("$s")
  fi
done
echo "run_fuzz.sh: compiling ${#stale[@]} of ${#sources[@]} loader sources with $cxx"
if [[ ${#stale[@]} -gt 0 ]]; then
  printf '%s\n' "${stale[@]}" | xargs -P "$jobs" -I{} \
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/experiments/data/{}.cpp" \
    -o "$out/obj/{}.o"
fi
objs=()
for s in "${sources[@]}"; do objs+=("$out/obj/$s.o"); done
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} \
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "$root/tests/fuzz/{}.cpp" "${objs[@]}" -lpugixml -o "$out/{}"

status=0
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  work="$out/corpus/$t"
  mkdir -p "$work"
  dict=()
  if [[ -f "$root/tests/fuzz/$t.dict" ]]; then dict=(-dict="$root/tests/fuzz/$t.dict"); fi
  echo "run_fuzz.sh: $t for ${seconds}s ($(ls "$seeds" | wc -l) seeds)"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "./$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -print_final_stats=0 "${dict[@]}" "$work" "$seeds" > "$out/$t.log" 2>&1); then
    echo "run_fuzz.sh: $t FAILED; last lines of $out/$t.log:" >&2
    tail -n 40 "$out/$t.log" >&2
    status=1
  else
    grep -E "^#[0-9]+ *DONE|Done [0-9]+ runs" "$out/$t.log" | tail -n 1 || true
  fi
done
if [[ $status -ne 0 ]]; then
  echo "run_fuzz.sh: failures (crash inputs are in $out/)" >&2
else
  echo "run_fuzz.sh: all ${#targets[@]} targets ran ${seconds}s without a failure"
fi
exit $status

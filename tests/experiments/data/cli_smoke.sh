#!/usr/bin/env bash
# End-to-end check of `mare data`: every generator writes its corpus, prints the oracle's
# F1 on the test split, `mare data inspect` reads every written file, the same seed
# gives the same bytes, and bad input exits with status 2 and a located message.
#
#   tests/experiments/data/cli_smoke.sh path/to/mare
#
# Rule: checks exit codes and the documented output lines only, never numbers.
set -euo pipefail
mare="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for g in synth-cdr synth-ctd synth-semeval; do
  out="$("$mare" data generate "$g" --out "$tmp/$g" --seed 5 --docs 12)"
  grep -q "oracle F1 on .*test: [0-9]" <<<"$out" || { echo "$g: no oracle F1 line"; exit 1; }
  "$mare" data generate "$g" --out "$tmp/$g.again" --seed 5 --docs 12 >/dev/null
  diff -r "$tmp/$g" "$tmp/$g.again" >/dev/null || { echo "$g: same seed, different bytes"; exit 1; }
done
for f in "$tmp"/synth-cdr/*.pubtator; do "$mare" data inspect "$f" --format pubtator | grep -q "relations:"; done
for f in "$tmp"/synth-ctd/*.tsv; do "$mare" data inspect "$f" --format bran-tsv | grep -q "relations:"; done
for f in "$tmp"/synth-semeval/subtask1.*/*.text.xml; do
  "$mare" data inspect "$f" --format semeval | grep -q "relations: .*relations.txt"
done
for f in "$tmp"/*/vectors.txt "$tmp"/*/vectors.bin; do
  "$mare" data inspect "$f" --format word2vec | grep -q "dimension: 50"
done
printf '1|t|A\n' >"$tmp/bad.pubtator"
set +e
msg="$("$mare" data inspect "$tmp/bad.pubtator" --format pubtator 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "bad input: exit $rc, expected 2"; exit 1; }
grep -q "mare: error: .*bad.pubtator:2:1: expected the abstract line" <<<"$msg" ||
  { echo "bad input: unexpected message: $msg"; exit 1; }
echo "cli_smoke: ok"

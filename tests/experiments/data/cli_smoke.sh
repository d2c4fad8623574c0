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
# The shipped real corpora by name, their statistics beside the thesis, and the official
# scorers on the release's own files (the gold scored against itself: F1 1).
corpora="$(dirname "$0")/../../../experiments/corpora"
"$mare" data stats cdr | grep -q "beside thesis Table 4.4" || { echo "data stats cdr"; exit 1; }
"$mare" data stats semeval2018:1.1 | grep -q "beside thesis Table 4.11" ||
  { echo "data stats semeval2018:1.1"; exit 1; }
"$mare" data inspect "$corpora/semeval2018-task7/1.2.text.xml" --format semeval | grep -q "documents: 350"
gold="$corpora/cdr/CDR_TestSet.PubTator.txt"
"$mare" score cdr "$gold" "$gold" --json "$tmp/cdr.json" | grep -q "F1 1.0000" ||
  { echo "score cdr: the gold against itself is not F1 1"; exit 1; }
grep -q '"f1": 1.0' "$tmp/cdr.json" || { echo "score cdr --json"; exit 1; }
keys="$corpora/semeval2018-task7/keys.test.1.1.txt"
"$mare" score semeval2018 "$keys" "$keys" | grep -q "^macro .*F1 1.0000" ||
  { echo "score semeval2018: the keys against themselves are not F1 1"; exit 1; }
echo "cli_smoke: ok"

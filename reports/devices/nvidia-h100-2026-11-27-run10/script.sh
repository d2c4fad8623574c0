#!/bin/bash
# Device call 12: steps/s of mare train at d 32 on the GPU, c9cc7a3 (two or three loss reads a
# step) against HEAD (one, Tensor::items), interleaved, same data and seed.
set -u
t0=$(date +%s)
ab=$PWD/.device/ab
export LD_LIBRARY_PATH=$ab/lib
w=/tmp/ab && rm -rf $w && mkdir -p $w
$ab/mare-new data generate synth-cdr --out $w/cdr --seed 1 > $OUT/gen.txt 2>&1
$ab/mare-new doctor > $OUT/doctor.txt 2>&1
for rep in 1 2; do
  for m in UTRE-CPD+d=32+heads=4+ner_prob=0 NTCRE-CPD+d=32+heads=4+ner_prob=0 bran+d=32+heads=4+ner_prob=0; do
    for b in old new; do
      [ $(( $(date +%s) - t0 )) -gt 165 ] && break 3
      d=$w/$b-$m-$rep
      $ab/mare-$b train --model $m --data synth-cdr:$w/cdr --device cuda --steps 300 --eval-every 300 --seed 1 --out $d > $d.log 2>&1
      python3 - "$b" "$m" "$rep" "$d" >> $OUT/rates.tsv <<'PY'
import json,sys
b,m,rep,d=sys.argv[1:]
t=json.load(open(d+'/timing.json'))
q=t['step_seconds_quantiles']
print(b,m,rep,'%.2f'%(1/t['seconds_per_step']),'%.2f'%(1/q['median']),'%.5f'%q['p25'],'%.5f'%q['p75'],sep='\t')
PY
      cp $d/result.json $OUT/result-$b-$m-$rep.json
    done
  done
done
echo "done at +$(( $(date +%s) - t0 ))s" >> $OUT/rates.tsv
cat $OUT/rates.tsv

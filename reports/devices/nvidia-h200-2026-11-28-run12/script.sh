#!/bin/bash
# Device call 14 (2026-11-28): the GPU report on the pack of 4cc92c8 (select_rows, scale_rows,
# --by-op): tests incl. the new ops' CUDA column, memcheck, racecheck, benches, peers (no ncu);
# then mare train d 32 UTRE-CPD twice and bench iteration --by-op on cuda.
set -u
t0=$(date +%s)
root=$PWD
cd .device && rm -rf pk && python3 -c "
import tarfile
tarfile.open('pack.txz', 'r:xz').extractall()" && cd "$root"
echo "unpacked at +$(( $(date +%s) - t0 ))s" >>"$OUT/times.txt"
export MARE_PEERS=$root/.device/peers MARE_STEP_TIMEOUT=200 MARE_PROFILE=0
timeout 280 .device/pk/source/reports/devices/gpu_report.sh .device/pk "$OUT/report" >"$OUT/report.log" 2>&1
echo "report rc=$? at +$(( $(date +%s) - t0 ))s" >>"$OUT/times.txt"
tar czf "$OUT/report.tgz" -C "$OUT" report report.md 2>/dev/null && rm -rf "$OUT/report"
export LD_LIBRARY_PATH=$root/.device/pk/lib
cur=$root/.device/pk/bin/mare
w=/tmp/ab && rm -rf $w && mkdir -p $w
$cur data generate synth-cdr --out $w/cdr --seed 1 > $OUT/gen.txt 2>&1
for rep in 1 2; do
  [ $(( $(date +%s) - t0 )) -gt 380 ] && break
  m=UTRE-CPD+d=32+heads=4+ner_prob=0; d=$w/$m-$rep
  $cur train --model $m --data synth-cdr:$w/cdr --device cuda --steps 300 --eval-every 300 --seed 1 --out $d > $d.log 2>&1
  python3 - "$m" "$rep" "$d" >> $OUT/rates.tsv <<'PY'
import json,sys
m,rep,d=sys.argv[1:]
t=json.load(open(d+'/timing.json'))
q=t['step_seconds_quantiles']
print(m,rep,'%.2f'%(1/t['seconds_per_step']),'%.2f'%(1/q['median']),'%.5f'%q['p25'],'%.5f'%q['p75'],sep='\t')
PY
  cp $d/result.json $OUT/result-$rep.json
done
[ $(( $(date +%s) - t0 )) -lt 400 ] && timeout 60 $cur bench iteration --device cuda --size paper --shape cdr --models UTRE-CPD,NTCRE-CPD --iterations 3 --by-op > $OUT/byop.txt 2>&1
echo "done at +$(( $(date +%s) - t0 ))s" >> $OUT/times.txt
cat $OUT/times.txt $OUT/rates.tsv

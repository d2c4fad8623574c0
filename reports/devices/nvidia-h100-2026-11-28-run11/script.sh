#!/bin/bash
# Device call 13 (prepared 2026-11-28, no GPU that session): after e1c9da8/a817692 (every device
# read counted; a step reads only its halting decisions and its losses).
#  1. the GPU report on the pack of HEAD (tests incl. ReModelsCuda.ATrainingStepReadsTheDevice...,
#     CudaRuntime.UploadedTargetsAndIndexSets..., memcheck, racecheck, benches, peers; no ncu);
#  2. for the time left: mare train d 32 steps/s, .device/ab/mare-new (4bc25d6-like: Tensor::items)
#     against .device/ab/mare-cur (HEAD), interleaved, same data and seed.
# Before: cd build-gpu && ninja; rm -rf .device/pk && reports/devices/pack.sh build-gpu .device/pk
#   && cp build-gpu/mare .device/ab/mare-cur && (cd .device && tar czf pack.tgz pk)
# carry: [".device/pack.tgz", ".device/peers", ".device/ab", ".device/run13.sh"]
set -u
t0=$(date +%s)
root=$PWD
cd .device && rm -rf pk && python3 -c "
import lzma, shutil, tarfile
tarfile.open('pack.txz', 'r:xz').extractall()
shutil.copyfileobj(lzma.open('ab2/mare-new.xz'), open('ab2/mare-new', 'wb'))" && chmod +x ab2/mare-new && cd "$root"
echo "unpacked at +$(( $(date +%s) - t0 ))s" >>"$OUT/times.txt"
export MARE_PEERS=$root/.device/peers MARE_STEP_TIMEOUT=200 MARE_PROFILE=0
timeout 250 .device/pk/source/reports/devices/gpu_report.sh .device/pk "$OUT/report" >"$OUT/report.log" 2>&1
echo "report rc=$? at +$(( $(date +%s) - t0 ))s" >>"$OUT/times.txt"
tar czf "$OUT/report.tgz" -C "$OUT" report report.md 2>/dev/null && rm -rf "$OUT/report"
export LD_LIBRARY_PATH=$root/.device/pk/lib
new=$root/.device/ab2/mare-new cur=$root/.device/pk/bin/mare
w=/tmp/ab && rm -rf $w && mkdir -p $w
$cur data generate synth-cdr --out $w/cdr --seed 1 > $OUT/gen.txt 2>&1
for rep in 1 2; do
  for m in UTRE-CPD+d=32+heads=4+ner_prob=0 bran+d=32+heads=4+ner_prob=0; do
    for b in new cur; do
      [ $(( $(date +%s) - t0 )) -gt 400 ] && break 3
      d=$w/$b-$m-$rep
      bin=$new; [ $b = cur ] && bin=$cur
      $bin train --model $m --data synth-cdr:$w/cdr --device cuda --steps 300 --eval-every 300 --seed 1 --out $d > $d.log 2>&1
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
echo "done at +$(( $(date +%s) - t0 ))s" >> $OUT/times.txt
cat $OUT/times.txt $OUT/rates.tsv

#!/bin/bash
# alternate ranker default vs none, same binary
P=/work/main/build/tools/polysci
for set in resnet50 fastrcnn vgga alexnet; do
 reps=5; [ $set = resnet50 ] && reps=11
 for i in 1 2; do
  for rk in default none; do
   $P bench conv --layers /work/shared/layers/$set.txt --N 2 --threads 2 --vs onednn --reps $reps --ranker $rk --csv /tmp/rk/${set}_${rk}_$i.csv > /tmp/rk/${set}_${rk}_$i.log 2>&1
   echo "$set $rk $i $(grep -h 'geomean ratio' /tmp/rk/${set}_${rk}_$i.log | grep -o '[0-9.]*$')"
  done
 done
done

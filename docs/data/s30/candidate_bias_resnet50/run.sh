for r in 1 2 3; do for n in 1 2; do
PS_NODEDUP=1 ${POLYSCI_NODEDUP:?build with nodedup.patch} bench conv --layers ../../../../../shared/layers/resnet50.txt --N $n --threads 2 --vs onednn --reps 20 --plan-reps 1 --candidates cand$n.csv --dist d${n}_$r.csv --csv r${n}_$r.csv > r${n}_$r.log 2>&1
done; done

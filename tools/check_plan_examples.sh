#!/bin/sh
# tools/check_plan_examples.sh BIN_BEFORE BIN_AFTER [GEN_BILLS]
# Runs the README's plan, simulate and stats examples (on generated bills)
# and their error cases with each binary in its own scratch directory and
# compares stdout, stderr, exit code and every file written, byte for byte.
# Masked: timings ("N.NNN s", "M rows/s") and a manifest's "seconds".
# Exits 1 on any difference, printing it.
set -u
BEFORE=$(realpath "$1"); AFTER=$(realpath "$2")
GEN=${3:-$(dirname "$0")/../build/gen_bills}
GEN=$(realpath "$GEN")
WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "kept $WORK" || trap 'rm -rf "$WORK"' EXIT
"$GEN" --rows 20000 --seed 7 -o "$WORK/bills.csv"
gzip -k "$WORK/bills.csv"

cmds() {
cat <<'CMDS'
plan --old-nodes 1000 --new-nodes 1010
plan --add 10 --remove 17,500 --json plan.json
plan --add 10 --remove 17,500 --json plan2.json --json-arcs --arcs arcs.tsv --pairs pairs.csv --svg p.svg --html p.html
plan --scheme ketama --nodes 50 --add 2 --json k.json --pairs k.csv
plan --scheme jump --nodes 50 --add 2 --json j.json
plan --scheme modulo --nodes 50 --add 2 --json m.json
plan --scheme slots --nodes 50 --remove 3 --json s.json --strict
plan --scheme jump --nodes 50 --remove 3 --arcs x.tsv
plan --scheme jump --nodes 50 --remove 3 --strict --json jv.json --pairs jv.csv
plan --scheme modulo --nodes 7 --add-names "a,b" --down 2 --pairs mo.csv --top 3
plan --nodes 20 --reweight 3=2 --down 5 --json rw.json --strict
plan --key bill_id --add 10 bills.csv.gz
plan --key bill_id --nodes 40 --add 3 --json d.json --pairs d.csv --batch-bytes 100K --order largest bills.csv.gz
bucket --key bill_id --nodes 40 -o buckets bills.csv.gz
plan --from-buckets buckets --add 10 --emit moves
plan --from-buckets buckets --add 2 --emit moves2 --json e.json --batch-bytes 50K --svg e.svg
plan --from-buckets buckets --ring-only --add 2 --json ro.json
plan --from-buckets buckets --nodes 3 --add 2
plan --from-buckets buckets --add 2 bills.csv
plan --ring-only --add 2
plan --emit x --add 2
plan --order largest --add 2
plan
plan --new-nodes 0
plan --new-nodes 5 --new-nodes-file nofile
plan --old-nodes-file nofile --add 1
plan --add 1 missing.csv
plan --key nosuch --add 1 bills.csv
plan --add 1 --json buckets/x.json --emit buckets --from-buckets buckets
plan --remove nosuch
plan --reweight 3=-1
plan --down nosuch --add 1
plan --help
simulate --keys 100000
simulate --keys 100000 --vnodes 1,10,50,100
simulate --keys 100000 --add 10 --capacity-factor 1.25
simulate --keys 20000 --scheme ketama --nodes 30 --tsv --svg sim.svg --html sim.html
simulate --keys 20000 --vnodes 1,10 --add 2 --svg sw.svg --html sw.html
simulate --keys 20000 --remove 3,5 --key-pattern seq
simulate --keys 0
simulate --down nosuch
simulate --keys 1000 --vnodes 1,2 --scheme modulo
simulate --keys 1000 --vnodes 1,2 --tsv
simulate --keys 1000 --remove nosuch
simulate --keys 1000 --scheme slots --remove 3 --capacity-factor 1.5 --tsv
simulate --help
stats --key bill_id --svg load.svg --html load.html bills.csv.gz
stats --key bill_id --tsv --nodes 30 bills.csv
stats --key bill_id --capacity-factor 1.1 bills.csv
stats buckets/
stats --tsv buckets
stats nodir/
stats --nodes 3 buckets
stats --key x buckets
stats --key bill_id --capacity-factor 1.2 --tsv --svg c.svg bills.csv
stats --help
CMDS
}

run_all() { # BIN DIR
    mkdir -p "$2"; cp "$WORK/bills.csv" "$WORK/bills.csv.gz" "$2/"
    n=0
    cmds | while IFS= read -r line; do
        n=$((n + 1))
        (cd "$2" && eval "\"$1\" $line" >"out.$n" 2>"err.$n" </dev/null; echo $? >"rc.$n")
        sed -i -E 's/[0-9]+\.[0-9]+ s\b/T s/g; s/[0-9.]+ M rows\/s/R M rows\/s/g; s/"seconds": [0-9.e+-]+/"seconds": T/g' "$2/out.$n" "$2/err.$n"
    done
    find "$2" -name manifest.json -exec sed -i -E 's/"seconds": [0-9.e+-]+/"seconds": T/g' {} +
}
run_all "$BEFORE" "$WORK/before"
run_all "$AFTER" "$WORK/after"
rm -f "$WORK"/before/bills.csv* "$WORK"/after/bills.csv*
if diff -r "$WORK/before" "$WORK/after"; then
    echo "check_plan_examples: $(cmds | wc -l) command lines, no difference"
else
    echo "check_plan_examples: DIFFERENCES (above)"; exit 1
fi

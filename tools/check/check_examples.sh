#!/usr/bin/env bash
# Byte-identity of the command line before and after a change:
# runs a fixed list of command lines - the documented examples made runnable
# on fixtures/ and on generated data, every command, a few error cases;
# then plan, simulate and stats in depth (every scheme, the plan's files,
# --from-buckets, and their error cases, in pe/) - once with each binary, each in a scratch
# directory of its own, and compares stdout, stderr, the exit code and
# every file the commands wrote, byte for byte. Exit 0 when all agree; 1
# with every difference printed.
#
# Usage: tools/check/check_examples.sh BIN_BEFORE BIN_AFTER
#   e.g. tools/check/check_examples.sh /work/baseline/ringshard build/ringshard
# GEN_BILLS (default build/gen_bills) makes the generated data; CHECK_KEEP=1
# keeps the scratch directory (its path is printed) to look at.
#
# Masked before comparing (in stdout, stderr and JSON/TSV/SVG/HTML files
# only; data files are compared raw):
#   - times: "seconds" in manifests before 0.8.0 (dropped), "N.NN s" and
#     speeds ("1.25 M rows/s", "352 k rows/s") in summaries (the wall clock differs from run to run);
#   - a generation manifest's "previous", the digest of the previous
#     manifest's bytes, before 0.8.0 its "seconds" included (each side checks its own
#     chain: verify_mem);
#   - the binary's path (each run names its own binary);
#   - temporary names, ".ringshard-tmp.<pid>.<hex>" (the pid differs).
# Nothing else is masked: node names, counts, CRCs, fingerprints and file
# names must be the same.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BIN_BEFORE BIN_AFTER" >&2
    exit 64
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
before=$(realpath "$1")
after=$(realpath "$2")
gen=$(realpath "${GEN_BILLS:-$here/build/gen_bills}")
for b in "$before" "$after" "$gen"; do
    [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 64; }
done
root=$(mktemp -d "${TMPDIR:-/tmp}/check_examples.XXXXXX")
[ -n "${CHECK_KEEP:-}" ] && echo "check_examples: keeping $root" >&2 || trap 'rm -rf "$root"' EXIT
# Copies of the binaries, so that a rebuild meanwhile cannot change them.
mkdir "$root/bin-before" "$root/bin-after"
cp "$before" "$root/bin-before/ringshard"
cp "$after" "$root/bin-after/ringshard"
before_given=$before after_given=$after
before=$root/bin-before/ringshard after=$root/bin-after/ringshard
export OMP_NUM_THREADS=2 RINGSHARD_LOG=warn
unset RINGSHARD_TEST_PAUSE_AT RINGSHARD_UNIT_BYTES RINGSHARD_SHOW_RANGES

# Shared, read-only inputs: both binaries read the same bytes by the same
# absolute paths, so that messages naming inputs agree.
data="$root/data"
mkdir -p "$data"
"$gen" --rows 30000 --seed 7 --newline-share 0.01 -o "$data/day1.csv"
"$gen" --rows 20000 --seed 8 --dup-share 0.2 -o "$data/day2.csv"
gzip -6nc "$data/day1.csv" > "$data/day1.csv.gz"
gzip -6nc "$data/day2.csv" > "$data/day2.csv.gz"
if command -v zstd > /dev/null; then
    zstd -q -1 -c "$data/day1.csv" > "$data/day1.csv.zst"
fi
cp "$here"/fixtures/data/bills_a.csv.gz "$here"/fixtures/data/bills_b.csv.gz "$here"/fixtures/data/bills_c.csv "$data/"
cp "$here"/fixtures/csv/bad_stray_quote.csv "$here"/fixtures/csv/tab_delimiter.csv "$data/"
printf 'CHONGQING\n001c4becd89f49f7b1c52fe4fcd54397\nuser:42\n' > "$data/keys.txt"
printf 'alpha 1\nbeta 2\n"node c" 1\ndelta 1 down\n' > "$data/nodes.txt"
printf 'a 1\nb 1\nc 1\nd 1\ne 1\n' > "$data/old.txt"
printf 'a 1\nb 1\nc 1\ne 1\nf 1\ng 2\n' > "$data/new.txt"
printf '127.0.0.1:11211 1\n127.0.0.2:11211 2\n127.0.0.3:11212 1\n' > "$data/servers.txt"
printf '%s\n' "$data/day1.csv.gz" "$data/bills_c.csv" > "$data/list.txt"
printf 'bill_id\n"unterminated\n' > "$data/bad_unterminated.csv"
"$gen" --rows 20000 --seed 7 -o "$data/bills.csv"   # plan_cases' data, copied into pe/
gzip -6nc "$data/bills.csv" > "$data/bills.csv.gz"
D=$data

# One case a line: a name, then the command line, run by bash in the
# binary's scratch directory with $RS set to the binary. Later cases may
# read what earlier ones wrote (relative paths). Keep names unique.
cases() {
cat <<EOF
help              \$RS --help
version           \$RS --version
bucket_help       \$RS bucket --help
bucket_gz         \$RS bucket --key bill_id -o buckets $D/day1.csv.gz $D/day2.csv.gz
bucket_again      \$RS bucket --key bill_id -o buckets $D/day1.csv.gz
bucket_force      \$RS bucket --key bill_id -o buckets --force $D/day1.csv.gz $D/day2.csv.gz
bucket_stdin      zcat $D/day1.csv.gz | \$RS bucket --key user_id,created_at -o comp -
bucket_plain      \$RS bucket --delimiter tab --no-header --key 2 --compress none -o tsvout $D/tab_delimiter.csv
bucket_none       \$RS bucket --key bill_id --compress none --nodes 50 -o plain $D/bills_a.csv.gz $D/bills_b.csv.gz $D/bills_c.csv
bucket_zstd       \$RS bucket --key bill_id --compress zstd --nodes 64 -o zout $D/day1.csv.gz
bucket_zstd_in    \$RS bucket --key bill_id --nodes 64 -o zin $D/day1.csv.zst
bucket_keysonly   \$RS bucket --key bill_id --keys-only --nodes 10 -o keys $D/bills_a.csv.gz
bucket_level      \$RS bucket --key bill_id --level 6 --zlib --nodes 20 -o lvl $D/bills_c.csv
bucket_list       \$RS bucket --key bill_id --nodes 30 --files-from $D/list.txt -o listed
bucket_null       printf '%s\\0' $D/bills_c.csv | \$RS bucket --null --files-from - --nodes 5 -o nulled
bucket_nodesfile  \$RS bucket --key bill_id --nodes-file $D/nodes.txt -o named $D/bills_c.csv
bucket_ketama     \$RS bucket --key bill_id --scheme ketama --nodes 40 -o ket $D/bills_c.csv
bucket_jump       \$RS bucket --key bill_id --scheme jump --nodes 40 -j 1 -o jmp $D/bills_c.csv
bucket_skip       \$RS bucket --on-bad-row skip --nodes 4 -o skipped $D/bad_stray_quote.csv
bucket_quar       \$RS bucket --on-bad-row quarantine=q.tsv --nodes 4 -o quar $D/bad_stray_quote.csv
bucket_bad        \$RS bucket --nodes 4 -o bad $D/bad_stray_quote.csv
bucket_unterm     \$RS bucket --nodes 4 -o bad2 $D/bad_unterminated.csv
bucket_noout      \$RS bucket $D/bills_c.csv
bucket_badkey     \$RS bucket --key nosuch -o badkey $D/bills_c.csv
bucket_level_bad  \$RS bucket --level 12 -o lvlbad $D/bills_c.csv
bucket_mem_bad    \$RS bucket --memory 32M -j 256 -o membad $D/bills_c.csv
bucket_mem16      \$RS bucket --memory 16M -o mem16 $D/bills_c.csv
bucket_mem32      \$RS bucket --key bill_id --memory 32M --nodes 8 -o mem32 $D/day1.csv.gz $D/day2.csv.gz
bucket_mem32_zstd \$RS bucket --key bill_id --memory 32M --compress zstd --nodes 8 -o mem32z $D/day1.csv
bucket_mem32_app  \$RS bucket --key bill_id --memory 32M --nodes 8 --append -o memapp $D/day1.csv.gz
bucket_mem16_app  \$RS bucket --memory 16M --append -o memapp $D/day2.csv.gz
bucket_mem32_app2 \$RS bucket --memory 32M --append -o memapp $D/day2.csv.gz $D/bills_c.csv
bucket_missing    \$RS bucket -o miss $D/nope.csv
bucket_quar_in    \$RS bucket --on-bad-row quarantine=buckets/q.tsv -o buckets --force $D/bills_c.csv
bucket_badopt     \$RS bucket --frobnicate -o x $D/bills_c.csv
dedup_help        \$RS dedup --help
dedup_first       \$RS dedup --key bill_id -o distinct $D/day1.csv.gz $D/day2.csv.gz
dedup_last        \$RS dedup --key bill_id --keep last --duplicates dups.tsv -o distinct_last $D/day1.csv.gz $D/day2.csv.gz
dedup_row         \$RS dedup --by row --nodes 16 --compress none -o distinct_row $D/day2.csv.gz
dedup_buckets     \$RS dedup --by row -o distinct_b --buckets buckets
dedup_buckets_k   \$RS dedup --duplicates dups_b.tsv --compress zstd -o distinct_bk --buckets buckets
dedup_tempz       \$RS dedup --key bill_id --temp-compress gzip --nodes 8 --memory 64M -o dd_tz $D/day2.csv.gz
dedup_mem16       \$RS dedup --memory 16M -o dd_mem16 $D/day2.csv.gz
dedup_mem32       \$RS dedup --key bill_id --memory 32M --nodes 4 --duplicates memdups.tsv -o dd_mem $D/day1.csv.gz $D/day2.csv.gz
dedup_mem32_app   \$RS dedup --key bill_id --memory 32M --nodes 4 --append -o dd_memapp $D/day1.csv.gz
dedup_mem32_app2  \$RS dedup --memory 32M --append --duplicates memdups2.tsv -o dd_memapp $D/day2.csv.gz
dedup_mem32_split \$RS dedup --key bill_id --memory 32M --nodes 1 -o dd_split $D/day1.csv.gz $D/day2.csv.gz $D/day1.csv $D/day2.csv.gz
verify_mem        \$RS verify mem32 && \$RS verify mem32z && \$RS verify memapp && \$RS verify dd_mem && \$RS verify dd_memapp && \$RS verify dd_split
dedup_quar        \$RS dedup --on-bad-row quarantine=dq.tsv --nodes 4 -o dd_q $D/bad_stray_quote.csv
dedup_bad_keep    \$RS dedup --keep middle -o dd_bad $D/bills_c.csv
dedup_bad_by      \$RS dedup --by column -o dd_bad $D/bills_c.csv
dedup_bk_input    \$RS dedup --buckets buckets -o dd_bad $D/bills_c.csv
dedup_bk_ring     \$RS dedup --buckets buckets --nodes 5 -o dd_bad
dedup_bk_keys     \$RS dedup --buckets keys -o dd_bad
dedup_bk_moves    \$RS dedup --buckets moves -o dd_bad
dedup_dups_in     \$RS dedup --duplicates distinct/d.tsv --force -o distinct $D/bills_c.csv
dedup_noout       \$RS dedup $D/bills_c.csv
dedup_exists      \$RS dedup -o distinct $D/bills_c.csv
verify_help       \$RS verify --help
verify_buckets    \$RS verify buckets
verify_quiet      \$RS verify --quiet buckets
verify_distinct   \$RS verify distinct && \$RS verify distinct_last && \$RS verify distinct_b
verify_zstd       \$RS verify zout && \$RS verify plain && \$RS verify keys
verify_none       \$RS verify nosuchdir
verify_two        \$RS verify buckets plain
verify_maxrep_bad \$RS verify --max-report 0 buckets
plan_help         \$RS plan --help
plan_ring         \$RS plan --old-nodes 1000 --new-nodes 1010
plan_json         \$RS plan --add 10 --remove 17,500 --json plan.json
plan_arcs         \$RS plan --old-nodes 100 --add 3 --json plan_arcs.json --json-arcs --arcs arcs.tsv --pairs pairs.csv --top 5
plan_files        \$RS plan --old-nodes-file $D/old.txt --new-nodes-file $D/new.txt --strict
plan_reweight     \$RS plan --nodes-file $D/old.txt --reweight b=3 --json rw.json
plan_modulo       \$RS plan --scheme modulo --old-nodes 10 --new-nodes 11
plan_jump         \$RS plan --scheme jump --old-nodes 10 --new-nodes 12 --strict
plan_slots        \$RS plan --scheme slots --nodes 8 --remove 2
plan_data         \$RS plan --key bill_id --add 10 $D/day1.csv.gz
plan_data_json    \$RS plan --key bill_id --add 10 --json plan_data.json $D/day1.csv.gz $D/day2.csv.gz
plan_from         \$RS plan --from-buckets buckets --add 10 --emit moves
plan_from_waves   \$RS plan --from-buckets buckets --add 10 --remove 3 --emit moves_w --batch-bytes 200K --order largest --json waves.json
plan_ring_only    \$RS plan --from-buckets buckets --ring-only --add 5
plan_emit_zstd    \$RS plan --key bill_id --nodes 64 --add 4 --emit zmoves --compress zstd $D/bills_c.csv
plan_report       \$RS plan --old-nodes 20 --add 2 --svg flows.svg --html flows.html
plan_compat       \$RS plan --compat libmemcached --old-nodes-file $D/servers.txt --new-nodes-file $D/old.txt
plan_bad_both     \$RS plan --from-buckets buckets --nodes 5 --add 1
plan_bad_nochange \$RS plan --old-nodes 10 --nodes 12 --add x
plan_emit_nodata  \$RS plan --add 1 --emit nodata
verify_moves      \$RS verify moves && \$RS verify moves_w && \$RS verify zmoves
stats_help        \$RS stats --help
stats_data        \$RS stats --key bill_id --svg load.svg --html load.html $D/day1.csv.gz
stats_dir         \$RS stats buckets
stats_tsv         \$RS stats --tsv --nodes 50 --key bill_id --capacity-factor 1.25 $D/bills_a.csv.gz
stats_dir_cap     \$RS stats --capacity-factor 1.1 --z 2 distinct
stats_bad         \$RS stats --nodes 5 buckets
simulate_help     \$RS simulate --help
simulate_default  \$RS simulate --keys 200000
simulate_sweep    \$RS simulate --keys 100000 --vnodes 1,10,50,100,200
simulate_add      \$RS simulate --keys 100000 --add 10 --capacity-factor 1.25
simulate_seed000  \$RS simulate --keys 100000 --key-pattern seq --scheme modulo --hash fnv1_32_java --nodes 100 --add 1
simulate_tsv      \$RS simulate --keys 50000 --nodes 20 --tsv --svg sim.svg --html sim.html
simulate_sweep_p  \$RS simulate --keys 20000 --nodes 30 --vnodes 10,100 --svg sweep.svg
simulate_bad      \$RS simulate --keys -5
locate_keys       \$RS locate CHONGQING 001c4becd89f49f7b1c52fe4fcd54397
locate_explain    \$RS locate --explain < $D/keys.txt
locate_compat     \$RS locate --compat twemproxy --nodes-file $D/servers.txt user:42
locate_noheader   \$RS locate --no-header --scheme jump --nodes 7 a b c
ring_summary      \$RS ring
ring_points       \$RS ring --nodes 20 --points
ring_shares       \$RS ring --shares --nodes 30 --vnodes 50
ring_desc         \$RS ring --description --nodes-file $D/nodes.txt
ring_bad          \$RS ring --scheme nosuch
ring_badfile      \$RS ring --nodes-file $D/nope.txt
unknown_command   \$RS frobnicate
no_command        \$RS
EOF
}

# A corrupted copy of a bucket directory for verify, made between the cases
# above and the ones below (same steps for both binaries).
corrupt_cases() {
cat <<EOF
verify_corrupt    \$RS verify corrupt
verify_corrupt_m  \$RS verify --max-report 1 corrupt
verify_corrupt_z  \$RS verify corruptz
EOF
}

# plan, simulate and stats in depth, run in pe/ (beside copies of
# bills.csv and bills.csv.gz) so that their relative names (buckets, moves,
# plan.json) do not meet the cases above.
plan_cases() {
cat <<EOF
pe_plan_ring        \$RS plan --old-nodes 1000 --new-nodes 1010
pe_plan_json        \$RS plan --add 10 --remove 17,500 --json plan.json
pe_plan_all_files   \$RS plan --add 10 --remove 17,500 --json plan2.json --json-arcs --arcs arcs.tsv --pairs pairs.csv --svg p.svg --html p.html
pe_plan_ketama      \$RS plan --scheme ketama --nodes 50 --add 2 --json k.json --pairs k.csv
pe_plan_jump        \$RS plan --scheme jump --nodes 50 --add 2 --json j.json
pe_plan_modulo      \$RS plan --scheme modulo --nodes 50 --add 2 --json m.json
pe_plan_slots       \$RS plan --scheme slots --nodes 50 --remove 3 --json s.json --strict
pe_plan_jump_arcs   \$RS plan --scheme jump --nodes 50 --remove 3 --arcs x.tsv
pe_plan_jump_strict \$RS plan --scheme jump --nodes 50 --remove 3 --strict --json jv.json --pairs jv.csv
pe_plan_names_down  \$RS plan --scheme modulo --nodes 7 --add-names "a,b" --down 2 --pairs mo.csv --top 3
pe_plan_reweight    \$RS plan --nodes 20 --reweight 3=2 --down 5 --json rw.json --strict
pe_plan_data        \$RS plan --key bill_id --add 10 bills.csv.gz
pe_plan_data_waves  \$RS plan --key bill_id --nodes 40 --add 3 --json d.json --pairs d.csv --batch-bytes 100K --order largest bills.csv.gz
pe_bucket           \$RS bucket --key bill_id --nodes 40 -o buckets bills.csv.gz
pe_plan_emit        \$RS plan --from-buckets buckets --add 10 --emit moves
pe_plan_emit_files  \$RS plan --from-buckets buckets --add 2 --emit moves2 --json e.json --batch-bytes 50K --svg e.svg
pe_plan_ring_only   \$RS plan --from-buckets buckets --ring-only --add 2 --json ro.json
pe_err_from_ring    \$RS plan --from-buckets buckets --nodes 3 --add 2
pe_err_from_input   \$RS plan --from-buckets buckets --add 2 bills.csv
pe_err_ring_only    \$RS plan --ring-only --add 2
pe_err_emit_nodata  \$RS plan --emit x --add 2
pe_err_order        \$RS plan --order largest --add 2
pe_err_plan_bare    \$RS plan
pe_err_new_zero     \$RS plan --new-nodes 0
pe_err_new_both     \$RS plan --new-nodes 5 --new-nodes-file nofile
pe_err_old_file     \$RS plan --old-nodes-file nofile --add 1
pe_err_missing      \$RS plan --add 1 missing.csv
pe_err_key          \$RS plan --key nosuch --add 1 bills.csv
pe_err_side_inside  \$RS plan --add 1 --json buckets/x.json --emit buckets --from-buckets buckets
pe_err_remove       \$RS plan --remove nosuch
pe_err_reweight     \$RS plan --reweight 3=-1
pe_err_down         \$RS plan --down nosuch --add 1
pe_plan_help        \$RS plan --help
pe_sim_default      \$RS simulate --keys 100000
pe_sim_sweep        \$RS simulate --keys 100000 --vnodes 1,10,50,100
pe_sim_add          \$RS simulate --keys 100000 --add 10 --capacity-factor 1.25
pe_sim_ketama       \$RS simulate --keys 20000 --scheme ketama --nodes 30 --tsv --svg sim.svg --html sim.html
pe_sim_sweep_add    \$RS simulate --keys 20000 --vnodes 1,10 --add 2 --svg sw.svg --html sw.html
pe_sim_remove_seq   \$RS simulate --keys 20000 --remove 3,5 --key-pattern seq
pe_err_sim_keys     \$RS simulate --keys 0
pe_err_sim_down     \$RS simulate --down nosuch
pe_err_sim_sweep_m  \$RS simulate --keys 1000 --vnodes 1,2 --scheme modulo
pe_err_sim_sweep_t  \$RS simulate --keys 1000 --vnodes 1,2 --tsv
pe_err_sim_remove   \$RS simulate --keys 1000 --remove nosuch
pe_sim_slots        \$RS simulate --keys 1000 --scheme slots --remove 3 --capacity-factor 1.5 --tsv
pe_sim_help         \$RS simulate --help
pe_stats_pictures   \$RS stats --key bill_id --svg load.svg --html load.html bills.csv.gz
pe_stats_tsv        \$RS stats --key bill_id --tsv --nodes 30 bills.csv
pe_stats_cap        \$RS stats --key bill_id --capacity-factor 1.1 bills.csv
pe_stats_dir        \$RS stats buckets/
pe_stats_dir_tsv    \$RS stats --tsv buckets
pe_err_stats_nodir  \$RS stats nodir/
pe_err_stats_ring   \$RS stats --nodes 3 buckets
pe_err_stats_key    \$RS stats --key x buckets
pe_stats_cap_svg    \$RS stats --key bill_id --capacity-factor 1.2 --tsv --svg c.svg bills.csv
pe_stats_help       \$RS stats --help
EOF
}

run_cases() {  # BIN DIR LISTFN
    local bin=$1 dir=$2 fn=$3 name cmd
    (
        cd "$dir"
        while read -r name cmd; do
            [ -n "$name" ] || continue
            set +e
            RS=$bin bash -c "$cmd" > "_$name.stdout" 2> "_$name.stderr" < /dev/null
            echo $? > "_$name.rc"
            set -e
        done < <("$fn")
    )
}

corrupt() {  # DIR: make corrupt/ and corruptz/ from buckets/ and zout/
    local dir=$1
    (
        cd "$dir"
        set +e  # a step that fails (no buckets/) shows as a difference in _corrupt.log
        exec 2> _corrupt.log
        cp -r buckets corrupt
        rm corrupt/17.csv.gz                                   # missing
        cp corrupt/3.csv.gz corrupt/extra.csv.gz               # extra
        cat corrupt/4.csv.gz >> corrupt/5.csv.gz               # wrong rows, counts, size
        printf 'x' >> corrupt/6.csv.gz                         # garbage after a member
        cp -r zout corruptz
        cp corruptz/1.csv.zst corruptz/2.csv.zst               # rows placed elsewhere
    )
}

for side in before after; do
    bin=$before
    [ $side = after ] && bin=$after
    mkdir "$root/$side"
    run_cases "$bin" "$root/$side" cases
    corrupt "$root/$side"
    run_cases "$bin" "$root/$side" corrupt_cases
    mkdir "$root/$side/pe"
    cp "$data/bills.csv" "$data/bills.csv.gz" "$root/$side/pe/"
    run_cases "$bin" "$root/$side/pe" plan_cases
done

mask() {  # FILE BIN: the masked text on stdout
    # a manifest's last member "seconds" (before 0.8.0) is dropped, with its comma
    perl -0pe 's/,\n *"seconds": *[0-9.eE+-]+\n/\n/g' "$1" | sed -E -e "s#$2#BIN#g" \
        -e 's/"seconds": *[0-9.eE+-]+/"seconds": T/g' \
        -e 's/"previous": *"[0-9a-f]{32}"/"previous": DIGEST/g' \
        -e 's/[0-9]+\.[0-9]+ s\b/T s/g' \
        -e 's/[0-9]+(\.[0-9]+)? ([kMG] )?rows\/s/R rows\/s/g' \
        -e 's/\.ringshard-tmp\.[0-9]+\.[0-9a-f]+/.ringshard-tmp.PID.HEX/g'
}

fail=0
diffs="$root/diffs"
: > "$diffs"
(cd "$root/before" && find . -type f | sort) > "$root/files.before"
(cd "$root/after" && find . -type f | sort) > "$root/files.after"
if ! diff -u "$root/files.before" "$root/files.after" > "$root/files.diff"; then
    { echo "=== the files written differ:"; cat "$root/files.diff"; } >> "$diffs"
    fail=1
fi
while read -r f; do
    a="$root/before/$f" b="$root/after/$f"
    [ -f "$b" ] || continue
    case "$f" in
    *.stdout|*.stderr|*.log|*.json|*.svg|*.html)
        if ! diff -u --label "before/$f" --label "after/$f" <(mask "$a" "$before") <(mask "$b" "$after") \
                >> "$diffs"; then
            fail=1
        fi ;;
    *)
        if ! cmp -s "$a" "$b"; then
            echo "=== $f: the bytes differ ($(stat -c %s "$a") vs $(stat -c %s "$b") bytes)" >> "$diffs"
            fail=1
        fi ;;
    esac
done < "$root/files.before"

ncases=$( (cases; corrupt_cases; plan_cases) | grep -c .)
nfiles=$(wc -l < "$root/files.before")
if [ $fail = 0 ]; then
    echo "check_examples: $ncases command lines, $nfiles files (stdout, stderr, exit codes, outputs): no difference"
    exit 0
fi
cat "$diffs"
echo "check_examples: DIFFERENCES between $before_given and $after_given ($ncases command lines, $nfiles files)" >&2
exit 1

#!/usr/bin/env bash
# The layers of the source tree (ctest: check_layers; docs/design.md, "The
# layers"). Each directory of src/ has a rank, and a file may include the
# headers of its own directory and of directories of a lower rank only:
#
#   cli 9 > jobs 8 > cluster 7 > pipeline 6 > dedup 5 > dataset 4, stats 4
#     > plan 3, report 3 > csv 2, io 2, ring 2 > util 1 > hash 0
#
# (directories of the same rank do not include each other). A header is
# mapped to its layer: "DIR/x.h" to src/DIR, "ringshard/x.h" by the table
# below (a public header the table does not name fails the check: give it
# its layer). The files checked are src/**/*.[ch] (their directory's layer)
# and include/ringshard/*.h (their own layer, by the table).
#
# The dataset layer's parts (ringshard/manifest.h, bucketdir.h, filename.h,
# outdir.h, keyidx.h) are included directly only by src/dataset/ and by each other:
# every other file, tests/ and tools/ included, includes ringshard/dataset.h.
#
# tools/check/check_layers.allow lists the includes that may break a rule (FILE
# HEADER REASON, one a line); an entry that no longer matches a breach fails
# too, so that the list stays exact. Prints every breach; exit 0 when none,
# 1 otherwise.
#
# Usage: tools/check/check_layers.sh [SOURCE_DIR]   (default: this script's tree)
set -euo pipefail
# shellcheck source=tools/check/allow_list.sh
. "$(cd "$(dirname "$0")" && pwd)/allow_list.sh"
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"
allow=tools/check/check_layers.allow

# LAYER RANK, then HEADER LAYER for include/ringshard/.
table='
rank cli 10
rank jobs 9
rank cluster 8
rank runplan 7
rank pipeline 6
rank dedup 5
rank dataset 4
rank stats 4
rank plan 3
rank report 3
rank csv 2
rank io 2
rank ring 2
rank util 1
rank hash 0
hdr job_bucket.h jobs
hdr job_cat.h jobs
hdr job_compact.h jobs
hdr job_dedup.h jobs
hdr job_plan.h jobs
hdr job_repair.h jobs
hdr job_simulate.h jobs
hdr job_stats.h jobs
hdr job_verify.h jobs
hdr runplan.h runplan
hdr pipeline.h pipeline
hdr dedup.h dedup
hdr history.h dedup
hdr dataset.h dataset
hdr bucketdir.h dataset
hdr filename.h dataset
hdr keyidx.h dataset
hdr manifest.h dataset
hdr outdir.h dataset
hdr stats.h stats
hdr plan.h plan
hdr report.h report
hdr csv.h csv
hdr deflate.h io
hdr direct.h io
hdr filelist.h io
hdr reader.h io
hdr writeback.h io
hdr nodes.h ring
hdr ring.h ring
hdr buf.h util
hdr error.h util
hdr interrupt.h util
hdr json.h util
hdr log.h util
hdr metrics.h util
hdr outfile.h util
hdr procio.h util
hdr testhook.h util
hdr timeline.h util
hdr util.h util
hdr text.h util
hdr hash.h hash
'

# FILE<TAB>HEADER<TAB>WHAT for every breach.
breaches=$( {
    find src include/ringshard -name '*.[ch]' | LC_ALL=C sort | xargs awk -v table="$table" '
        BEGIN {
            n = split(table, lines, "\n")
            for (i = 1; i <= n; i++) {
                split(lines[i], w, " ")
                if (w[1] == "rank") rank[w[2]] = w[3]
                else if (w[1] == "hdr") layer[w[2]] = w[3]
            }
        }
        FNR == 1 {
            own = ""
            if (FILENAME ~ /^src\//) { split(FILENAME, p, "/"); own = p[2] }
            else { h = FILENAME; sub(/.*\//, "", h); own = (h in layer) ? layer[h] : "?" h }
            if (own ~ /^\?/) printf "%s\t-\tnot in the table of tools/check/check_layers.sh: give it its layer\n", FILENAME
            else if (!(own in rank)) printf "%s\t-\tsrc/%s has no rank in tools/check/check_layers.sh: give it one\n", FILENAME, own
        }
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            inc = $0
            sub(/^[^"]*"/, "", inc)
            sub(/".*/, "", inc)
            if (inc !~ /\//) next                      # rs_config.h and the like
            split(inc, q, "/")
            if (q[1] == "ringshard") {
                if (!(q[2] in layer)) {
                    printf "%s\t%s\tnot in the table of tools/check/check_layers.sh: give it its layer\n", FILENAME, inc
                    next
                }
                to = layer[q[2]]
            } else to = q[1]
            if (!(to in rank) || own ~ /^\?/ || !(own in rank)) next
            if (to != own && rank[to] >= rank[own])
                printf "%s\t%s\t%s (rank %d) includes %s (rank %d): layers call downward only\n",
                       FILENAME, inc, own, rank[own], to, rank[to]
        }'
    # the dataset layer is reached through its one header
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]ringshard/(manifest|bucketdir|filename|outdir|keyidx)\.h[">]' \
         src include tests tools 2>/dev/null | LC_ALL=C sort |
    awk -F: '
        $1 ~ /^src\/dataset\// { next }
        $1 ~ /^include\/ringshard\/(dataset|manifest|bucketdir|filename|outdir|keyidx)\.h$/ { next }
        { inc = $0; sub(/^[^<"]*[<"]/, "", inc); sub(/[>"].*/, "", inc)
          printf "%s\t%s\ta part of the dataset layer: include ringshard/dataset.h instead\n", $1, inc }'
} )

fail=0
while IFS=$'\t' read -r file inc what; do
    [ -n "$file" ] || continue
    if ! allow_has "$allow" "$file" "$inc"; then
        echo "check_layers: $file: #include \"$inc\": $what" >&2
        fail=1
    fi
done <<< "$breaches"

allow_stale check_layers "$allow" "$breaches" "not a breach" || fail=1

[ "$fail" -eq 0 ] && echo "check_layers: every include goes down the layers; the dataset layer through dataset.h"
exit "$fail"

/* repair, damage by damage, against references that do not use ringshard
 * (tests/repair_lib.sh: rows read with gzip, zstd and cat, compared as
 * multisets with sort): verify and repair name the same damaged files;
 * a damaged data file costs its own rows only (its generation's other
 * files are kept): the repaired directory holds every input's rows but
 * those of the files repair says it did not keep, and appending the inputs
 * it names brings back exactly those (the manifest says which nodes' rows
 * of them were lost); a key index never costs a row. Killed at any publishing call,
 * DIR is whole at every instant, and the next run goes on from it or
 * refuses (exit 2), never making a new DIR. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
#define LIB WAIT_SH APPEND_LIB ". '" RS_SOURCE_DIR "/tests/repair_lib.sh'; "
#define OK(...) SH_OK(LIB __VA_ARGS__)
#define INPUTS "in1.csv in2.csv in3.csv"

/* tests/kill_sweep.py on repair of D, a copy of B in S, killed at each call
 * of the system calls that follow (a quoted list): the damaged D, the
 * repaired one (2000 rows) or none; after each kill, the next append (by
 * bucket, by dedup), compact and repair on a copy of S refuse or go on. */
#define REPAIR_SWEEP                                                                                       \
    "python3 " RS_SOURCE_DIR "/tests/kill_sweep.py S/D --setup 'rm -rf S && mkdir S && cp -a B S/D' "       \
    "--cmd 'cd S && exec \"$RS\" repair --quiet D' --done-rc 3 --repair 2000 "                                \
    "--next-on-copy '\"$RS\" bucket --quiet --append -o D ../in4.csv' "                                      \
    "--next-on-copy '\"$RS\" dedup --quiet --append -o D ../in4.csv' --next-on-copy '\"$RS\" compact --quiet D' " \
    "--next-on-copy '\"$RS\" repair --quiet D' --syscalls "

/* in1..in3.csv: 1000 bills each, no line break inside a field, no key
 * twice; Wgzip, Wzstd, Wnone: a base (in1) and two appends (in2, in3) over
 * 4 nodes; H: the same by dedup --append (with key indexes). */
static void fixture_dirs(void)
{
    test_dir_setup();
    SH_OK("for i in 1 2 3 4; do " GEN " --rows 1000 --seed $i --newline-share 0 --dup-share 0 -o in$i.csv "
          "2>/dev/null || exit 1; done; for c in gzip zstd none; do "
          "\"$RS\" bucket --quiet --compress $c --key bill_id --nodes 4 -o W$c in1.csv && "
          "\"$RS\" bucket --quiet --append -o W$c in2.csv && \"$RS\" bucket --quiet --append -o W$c in3.csv || exit 1; "
          "done && \"$RS\" dedup --quiet --append --key bill_id --nodes 4 -o H in1.csv && "
          "\"$RS\" dedup --quiet --append -o H in2.csv && \"$RS\" dedup --quiet --append -o H in3.csv && "
          "test -f H/g00000003/2.keyidx");
}

TestSuite(repair, .init = fixture_dirs, .fini = test_dir_teardown, .timeout = 900);

/* Each damage a disk or an operator makes, on each kind of file (compact
 * refuses every one, DIR byte for byte): a bit
 * flipped in a data file of the base and of a generation (gzip, zstd,
 * plain); a bit flipped in a gzip member's MTIME, which no decoder reads
 * (rewritten: every row kept, as compact refuses it by its stored CRC-32
 * and verify names it); a base file recompressed by gzip -9 (another
 * size, the same rows: rewritten whole, every row kept); bytes appended to one (cut back: every row kept); bytes inserted
 * in one (not cut back); one cut short; the line count a member's RS
 * header (a zstd metadata frame) declares; a key index removed, cut short,
 * flipped; the base's index removed (every row kept); two files of two
 * generations; a data file of a dedup directory, of the base and of a
 * generation; a manifest whose totals its files contradict, or whose input
 * names a generation that did not ingest it (written again), or that lists
 * a file twice (carried once). */
Test(repair, verify_and_repair_agree_and_every_row_comes_back)
{
    static const struct {
        const char *src, *damage, *append, *result;
    } cases[] = {
        {"Wgzip", "flip D/2.csv.gz", "bucket", "rc=3 again=in1.csv"},
        {"Wgzip", "flip D/g00000003/1.csv.gz", "bucket", "rc=3 again=in3.csv"},
        {"Wzstd", "flip D/0.csv.zst", "bucket", "rc=3 again=in1.csv"},
        {"Wzstd", "flip D/g00000002/3.csv.zst", "bucket", "rc=3 again=in2.csv"},
        {"Wnone", "flip D/1.csv", "bucket", "rc=3 again=in1.csv"},
        {"Wnone", "flip D/g00000002/0.csv", "bucket", "rc=3 again=in2.csv"},
        {"Wgzip", "printf \"stray 8B\" >> D/g00000003/2.csv.gz", "bucket", "rc=0 again="},
        {"Wzstd", "printf \"stray 8B\" >> D/1.csv.zst", "bucket", "rc=0 again="},
        {"Wnone", "printf \"x,y,z\\n\" >> D/g00000002/3.csv", "bucket", "rc=0 again="},
        {"Wgzip", "truncate -s -9 D/g00000002/1.csv.gz", "bucket", "rc=3 again=in2.csv"},
        {"Wgzip", "flip_rs_lines D/3.csv.gz", "bucket", "rc=3 again=in1.csv"},
        {"Wzstd", "flip_rs_lines D/g00000003/0.csv.zst", "bucket", "rc=3 again=in3.csv"},
        {"H", "rm D/g00000003/3.keyidx", "dedup", "rc=0 again="},
        {"H", "truncate -s -5 D/g00000002/1.keyidx", "dedup", "rc=0 again="},
        {"H", "flip D/g00000002/0.keyidx", "dedup", "rc=0 again="},
        {"H", "rm D/2.keyidx", "dedup", "rc=0 again="},
        {"H", "flip D/g00000003/2.csv.gz", "dedup", "rc=3 again=in3.csv"},
        {"Wzstd", "truncate -s -7 D/g00000003/2.csv.zst", "bucket", "rc=3 again=in3.csv"},
        {"Wnone", "truncate -s -20 D/g00000003/1.csv", "bucket", "rc=3 again=in3.csv"},
        {"Wgzip", "insert8 D/g00000002/0.csv.gz", "bucket", "rc=3 again=in2.csv"},
        {"Wzstd", "insert8 D/g00000002/2.csv.zst", "bucket", "rc=3 again=in2.csv"},
        {"Wnone", "insert8 D/g00000003/3.csv", "bucket", "rc=3 again=in3.csv"},
        {"Wgzip", "flip D/g00000002/0.csv.gz && flip D/g00000003/2.csv.gz", "bucket", "rc=3 again=in2.csv in3.csv"},
        {"Wzstd", "flip D/1.csv.zst && flip D/g00000003/1.csv.zst", "bucket", "rc=3 again=in1.csv in3.csv"},
        {"H", "flip D/1.csv.gz", "dedup", "rc=3 again=in1.csv"},
        {"H", "flip D/g00000002/3.csv.gz && rm D/g00000003/1.keyidx", "dedup", "rc=3 again=in2.csv"},
        {"Wgzip", "flip_byte D/g00000002/1.csv.gz 5", "bucket", "rc=0 again="},
        {"Wgzip", "flip_byte D/3.csv.gz 6", "bucket", "rc=0 again="},
        {"Wgzip", "recompress D/2.csv.gz", "bucket", "rc=0 again="},
        {"H", "flip_byte D/g00000003/0.csv.gz 4", "dedup", "rc=0 again="},
        {"Wgzip", "tamper_totals D/g00000003/manifest.json", "bucket", "rc=0 again="},
        {"Wzstd", "tamper_totals D/manifest.json", "bucket", "rc=0 again="},
        {"H", "tamper_input_generation D/g00000003/manifest.json", "dedup", "rc=0 again="},
        {"Wnone", "tamper_input_generation D/manifest.json", "bucket", "rc=0 again="},
        {"Wgzip", "list_twice D/g00000002/manifest.json", "bucket", "rc=0 again="},
        {"H", "list_twice D/g00000003/manifest.json", "dedup", "rc=0 again="},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = sh(LIB "repair_case %s '%s' %s " INPUTS, cases[i].src, cases[i].damage, cases[i].append);
        cr_assert_eq(r.rc, 0, "%s: exit %d\n%s%s", cases[i].damage, r.rc, r.out, r.err);
        cr_assert(strstr(r.out, cases[i].result), "%s: '%s' not in '%s'", cases[i].damage, cases[i].result, r.out);
        cmd_result_free(&r);
    }
}

/* The summary of a repair that could not keep rows: what was cut back and
 * not kept (the damaged file's rows and node, its generation's inputs),
 * each node's rows kept and not kept (only the damaged file's node lost
 * any), the inputs to append again; and in its --metrics file. */
Test(repair, says_what_it_kept_per_node)
{
    OK("rm -rf D D.* && cp -a Wgzip D && flip D/g00000002/3.csv.gz && printf 'tail' >> D/g00000003/0.csv.gz && "
       "{ \"$RS\" repair --metrics m.prom D > r.out 2> r.err; test $? = 3; } && "
       "grep -q '^CUT BACK D/g00000003/0.csv.gz: ' r.out && grep -q '^DAMAGE D/g00000002/3.csv.gz: unreadable' r.out && "
       "lost=$(dec 3.csv.gz < Wgzip/g00000002/3.csv.gz | tail -n +2 | wc -l) && test $lost -gt 0 && "
       "grep -q \"^NOT KEPT D/g00000002/3.csv.gz: $lost rows of node 3, of generation 2 (its other files kept); the "
       "inputs whose rows of node 3 an append ingests again: in2.csv$\" r.out && "
       "kept=$(dec 3.csv.gz < D/3.csv.gz | tail -n +2 | wc -l) && all3=$(for f in Wgzip/3.csv.gz Wgzip/g*/3.csv.gz; do "
       "dec $f < $f | tail -n +2; done | wc -l) && test $((kept + lost)) = $all3 && grep -q \"^NODE 3: $kept rows kept, $lost not kept$\" r.out && "
       "test $(grep -c '^NODE ' r.out) = 1 && "
       "grep -q \"^ringshard_repair_node_rows{command=\\\"repair\\\",node=\\\"3\\\",state=\\\"not_kept\\\"} $lost$\" m.prom && "
       "grep -q \"^ringshard_repair_node_rows{command=\\\"repair\\\",node=\\\"3\\\",state=\\\"kept\\\"} $kept$\" m.prom && "
       "grep -q 'ringshard_repair_input_to_append{command=\"repair\",input=\"in2.csv\"} 1' m.prom && "
       "grep -q \"^ringshard_repair_rows_not_kept{command=\\\"repair\\\"} $lost$\" m.prom && "
       "grep -q \"ringshard_rows_written{command=\\\"repair\\\"} $((3000 - lost))$\" m.prom && "
       "grep -q '1 damaged files not kept' r.err && "
       "python3 -c 'import json, sys; m = json.load(open(\"D/manifest.json\")); "
       "l = [(i[\"path\"], [n[\"node\"] for n in i.get(\"lost\", [])]) for i in m[\"inputs\"]]; "
       "sys.exit(l != [(\"in1.csv\", []), (\"in2.csv\", [\"3\"]), (\"in3.csv\", [])])'");
}

/* The manifest's record of what was lost outlives appends and compact:
 * after repair, an append of another input and a compact that merges it,
 * the append of the input named brings back exactly the rows not kept
 * (bucket and dedup directories), records them as restored, and a second
 * append of it is skipped as already ingested. */
Test(repair, lost_rows_come_back_after_appends_and_compact)
{
    OK("for s in Wgzip H; do a=bucket; test $s = H && a=dedup; "
       "rm -rf D D.* && cp -a $s D && flip D/g00000003/0.csv.gz && "
       "{ \"$RS\" repair --quiet D > r.out; test $? = 3; } && \"$RS\" $a --quiet --append -o D in4.csv && "
       "\"$RS\" compact --quiet D && test ! -e D/g00000004 && "
       "\"$RS\" $a --append -o D in3.csv 2> a.err && grep -q 'those rows only are ingested again' a.err && "
       "rows_of D | LC_ALL=C sort > got.rows && rows_in in1.csv in2.csv in3.csv in4.csv | LC_ALL=C sort > all.rows && "
       "cmp got.rows all.rows && \"$RS\" verify --quiet D && "
       "grep -q '\"restored\"' D/g00000005/manifest.json && "
       "\"$RS\" $a --append -o D in3.csv 2> b.err && grep -q 'already ingested' b.err && test ! -e D/g00000006 && "
       "\"$RS\" compact --quiet D && rows_of D | LC_ALL=C sort > got.rows && cmp got.rows all.rows && "
       "\"$RS\" $a --append -o D in3.csv 2> c.err && grep -q 'already ingested' c.err || exit 1; done");
}

/* An input recognised by its content (the same CSV gzipped) brings back
 * the rows lost, under --on-seen fail too (it is not all held); the plain
 * file after it is skipped as already ingested. */
Test(repair, an_input_recognised_by_content_brings_back_its_lost_rows)
{
    OK("rm -rf D D.* && cp -a Wzstd D && flip D/g00000002/1.csv.zst && "
       "{ \"$RS\" repair --quiet D > r.out; test $? = 3; } && grep -q '^NOT KEPT D/g00000002/1.csv.zst: ' r.out && "
       "gzip -c in2.csv > in2.csv.gz && \"$RS\" bucket --quiet --append --on-seen fail -o D in2.csv.gz && "
       "rows_of D | LC_ALL=C sort > got.rows && rows_in in1.csv in2.csv in3.csv | LC_ALL=C sort > all.rows && "
       "cmp got.rows all.rows && \"$RS\" verify --quiet D && "
       "\"$RS\" bucket --append -o D in2.csv 2> s.err && grep -q 'already ingested' s.err && "
       "rows_of D | LC_ALL=C sort > got.rows && cmp got.rows all.rows");
}

/* m1..m3.csv: 40000 bills each (3.8 MB: several batches at --memory 32M,
 * so that every file has several gzip members or zstd frames); Mgzip,
 * Mzstd: a base (m1) and two appends (m2, m3) over 4 nodes; MH: the same
 * by dedup --append (with key indexes); CMgzip, CMzstd, CMH: each
 * compacted (a base whose files hold the rows of three inputs). */
static void fixture_members(void)
{
    test_dir_setup();
    SH_OK("for i in 1 2 3; do " GEN " --rows 40000 --seed $i --newline-share 0 --dup-share 0 -o m$i.csv "
          "2>/dev/null || exit 1; done; for c in gzip zstd; do "
          "\"$RS\" bucket --quiet --memory 32M --compress $c --key bill_id --nodes 4 -o M$c m1.csv && "
          "\"$RS\" bucket --quiet --memory 32M --append -o M$c m2.csv && "
          "\"$RS\" bucket --quiet --memory 32M --append -o M$c m3.csv || exit 1; done && "
          "\"$RS\" dedup --quiet --memory 32M --append --key bill_id --nodes 4 -o MH m1.csv && "
          "\"$RS\" dedup --quiet --memory 32M --append -o MH m2.csv && "
          "\"$RS\" dedup --quiet --memory 32M --append -o MH m3.csv && "
          "python3 " RS_SOURCE_DIR "/tests/check_members.py Mgzip/g00000003/1.csv.gz | grep -Eq '^ok ([4-9]|[1-9][0-9]+) members' && "
          "python3 " RS_SOURCE_DIR "/tests/check_members.py MH/g00000002/0.csv.gz | grep -Eq '^ok ([3-9]|[1-9][0-9]+) members' && "
          "for s in Mgzip Mzstd MH; do cp -a $s C$s && \"$RS\" compact --quiet C$s || exit 1; done");
}

TestSuite(repair_members, .init = fixture_members, .fini = test_dir_teardown, .timeout = 900);

/* A bit flipped inside one member of a file of several gzip members (zstd
 * frames), of a generation and of the base, bucket and dedup directories:
 * repair keeps the file's other members, and loses exactly the rows of
 * the member the flip changed (told apart by comparing the damaged copy's
 * bytes with the intact file member by member, in Python: members_lost),
 * records them as those ordinals of the input's rows on the node, and an
 * append of the input brings back exactly them, once. */
Test(repair_members, a_damaged_member_costs_its_own_rows_only)
{
    static const struct {
        const char *src, *file, *damage, *append, *result;
    } cases[] = {
        {"Mgzip", "g00000003/1.csv.gz", "flip D/g00000003/1.csv.gz", "bucket", "again=m3.csv"},
        {"Mgzip", "2.csv.gz", "flip D/2.csv.gz", "bucket", "again=m1.csv"},
        {"Mzstd", "g00000002/3.csv.zst", "flip D/g00000002/3.csv.zst", "bucket", "again=m2.csv"},
        {"Mzstd", "1.csv.zst", "flip D/1.csv.zst", "bucket", "again=m1.csv"},
        {"Mgzip", "g00000002/0.csv.gz", "flip_byte D/g00000002/0.csv.gz $(( $(stat -c %s D/g00000002/0.csv.gz) - 3 ))",
         "bucket", "again=m2.csv"},
        {"MH", "g00000002/0.csv.gz", "flip_byte D/g00000002/0.csv.gz 300", "dedup", "again=m2.csv"},
        {"MH", "0.csv.gz", "flip D/0.csv.gz", "dedup", "again=m1.csv"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = sh(LIB "repair_members_case %s %s '%s' %s m1.csv m2.csv m3.csv", cases[i].src, cases[i].file,
                          cases[i].damage, cases[i].append);
        cr_assert_eq(r.rc, 0, "%s: exit %d\n%s%s", cases[i].damage, r.rc, r.out, r.err);
        cr_assert(strstr(r.out, cases[i].result), "%s: '%s' not in '%s'", cases[i].damage, cases[i].result, r.out);
        cmd_result_free(&r);
    }
}

/* The same of a compacted base, whose files hold the rows of three
 * inputs one after the other (files[].runs): a flip in the middle of a
 * node's file, inside m2's rows, costs the rows of its member only,
 * recorded as those of m2 (its ordinals: the file's less the node's rows
 * of m1, counted in the copy before compaction). */
Test(repair_members, a_damaged_member_of_a_compacted_base_costs_its_own_rows_only)
{
    static const struct {
        const char *src, *file, *append;
    } cases[] = {
        {"Mgzip", "1.csv.gz", "bucket"}, {"Mzstd", "3.csv.zst", "bucket"}, {"MH", "0.csv.gz", "dedup"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = sh(LIB "RM_BEFORE=$(dec %s < %s/%s | tail -n +2 | wc -l) repair_members_case C%s %s 'flip D/%s' %s "
                          "m1.csv m2.csv m3.csv", cases[i].file, cases[i].src, cases[i].file, cases[i].src,
                          cases[i].file, cases[i].file, cases[i].append);
        cr_assert_eq(r.rc, 0, "C%s/%s: exit %d\n%s%s", cases[i].src, cases[i].file, r.rc, r.out, r.err);
        cr_assert(strstr(r.out, "again=m2.csv"), "C%s/%s: '%s'", cases[i].src, cases[i].file, r.out);
        cmd_result_free(&r);
    }
}

/* Two members damaged in a compacted base file, one among m1's rows and
 * one among m3's: each input loses exactly its member's rows (ordinals
 * mapped through the runs, checked against the counts of the copy before
 * compaction), both are named, and appending them brings every row back,
 * once; the repaired base's runs leave the lost rows out, so that a
 * second damage after the repair is mapped as exactly. */
Test(repair_members, damaged_members_of_two_inputs_in_a_compacted_file_are_each_their_inputs)
{
    OK("rm -rf D D.* && cp -a CMgzip D && s=$(stat -c %%s D/2.csv.gz) && "
       "flip_byte D/2.csv.gz $((s / 6)) && flip_byte D/2.csv.gz $((s * 5 / 6)) && "
       "{ \"$RS\" repair D > r.out; test $? = 3; } && "
       "grep -q '^NOT KEPT D/2.csv.gz: .*: 2 of its [0-9]* gzip members damaged.*an append ingests again: m1.csv, m3.csv$' "
       "r.out && \"$RS\" verify --quiet D && "
       "members_lost CMgzip/2.csv.gz D.damaged.1/2.csv.gz | LC_ALL=C sort > lost.rows && "
       "n1=$(dec x.gz < Mgzip/2.csv.gz | tail -n +2 | wc -l) && "
       "n2=$(dec x.gz < Mgzip/g00000002/2.csv.gz | tail -n +2 | wc -l) && "
       "python3 -c 'import json, sys\n"
       "n1, n2 = int(sys.argv[1]), int(sys.argv[2]); m = json.load(open(\"D/manifest.json\"))\n"
       "got = {i[\"path\"]: [[r[\"from\"], r[\"to\"]] for r in i.get(\"lost_rows\", [])] for i in m[\"inputs\"]}\n"
       "r = [[int(x) for x in l.split()] for l in open(\"members.ranges\")]\n"
       "want = {\"m1.csv\": [x for x in r if x[1] <= n1], \"m2.csv\": [],\n"
       "        \"m3.csv\": [[a - n1 - n2, b - n1 - n2] for a, b in r if a >= n1 + n2]}\n"
       "ok = len(r) == 2 and got == want\n"
       "sys.exit(0 if ok else \"lost_rows %%s, want %%s\" %% (got, want))' $n1 $n2 && "
       "rows_of D | LC_ALL=C sort > got.rows && rows_in m1.csv m2.csv m3.csv | LC_ALL=C sort > all.rows && "
       "LC_ALL=C comm -23 all.rows lost.rows > want.rows && cmp got.rows want.rows && "
       "cp -a D E && flip E/2.csv.gz && { \"$RS\" repair --quiet E > r2.out; test $? = 3; } && "
       "members_lost D/2.csv.gz E.damaged.1/2.csv.gz | LC_ALL=C sort > lost2.rows && "
       "rows_of E | LC_ALL=C sort > got2.rows && LC_ALL=C comm -23 want.rows lost2.rows > want2.rows && "
       "cmp got2.rows want2.rows && again=$(sed -n 's/^NOT KEPT .*an append ingests again: //p' r2.out) && "
       "\"$RS\" bucket --quiet --memory 32M --append -o E m3.csv m1.csv $again && "
       "rows_of E | LC_ALL=C sort > got.rows && cmp got.rows all.rows && \"$RS\" verify --quiet E && "
       "\"$RS\" bucket --quiet --append -o E m1.csv m2.csv m3.csv 2> s.err && "
       "rows_of E | LC_ALL=C sort > got.rows && cmp got.rows all.rows");
}

/* A generation of two inputs written by bucket --append: its files say
 * which input's rows they hold (files[].runs, counted by the pipeline's
 * write stage), so a damaged member of each input costs its own rows
 * only, recorded as that input's (the boundary: x.csv's rows of node 2,
 * counted by bucketing x.csv alone), both inputs named; appending them
 * brings every row back, once. The same runs whatever -j, --producers
 * (lanes) and --memory. */
Test(repair_members, damaged_members_of_a_generation_of_two_inputs_are_each_their_inputs)
{
    OK(GEN " --rows 30000 --seed 9 --newline-share 0 --dup-share 0 -o x.csv 2>/dev/null && "
       GEN " --rows 30000 --seed 10 --newline-share 0 --dup-share 0 -o y.csv 2>/dev/null && "
       "rm -rf F X && cp -a Mgzip F && \"$RS\" bucket --quiet --memory 32M --append -o F x.csv y.csv && "
       "\"$RS\" bucket --quiet --memory 32M --key bill_id --nodes 4 -o X x.csv && "
       "n1=$(dec x.gz < X/2.csv.gz | tail -n +2 | wc -l) && "
       "grep -q \"\\\"runs\\\": \\\"0:0-$n1 1:0-\" F/g00000004/manifest.json && "
       "for o in '-j 1 --memory 32M' '-j 2 --producers 2 --memory 32M' '-j 2 --memory 64M'; do rm -rf P && cp -a Mgzip P && "
       "\"$RS\" bucket --quiet $o --append -o P x.csv y.csv && "
       "grep '\"runs\"' F/g00000004/manifest.json > r1 && grep '\"runs\"' P/g00000004/manifest.json > r2 && "
       "test $(wc -l < r1) = 4 && cmp r1 r2 || exit 1; done && "
       "rm -rf D D.* && cp -a F D && s=$(stat -c %%s D/g00000004/2.csv.gz) && "
       "flip_byte D/g00000004/2.csv.gz $((s / 6)) && flip_byte D/g00000004/2.csv.gz $((s * 5 / 6)) && "
       "{ \"$RS\" repair D > r.out; test $? = 3; } && "
       "grep -q '^NOT KEPT D/g00000004/2.csv.gz: .*: 2 of its [0-9]* gzip members damaged.*an append ingests again: "
       "x.csv, y.csv$' r.out && \"$RS\" verify --quiet D && "
       "members_lost F/g00000004/2.csv.gz D.damaged.1/g00000004/2.csv.gz | LC_ALL=C sort > lost.rows && "
       "python3 -c 'import json, sys\n"
       "n1 = int(sys.argv[1]); m = json.load(open(\"D/manifest.json\"))\n"
       "got = {i[\"path\"]: [[r[\"from\"], r[\"to\"]] for r in i.get(\"lost_rows\", [])] for i in m[\"inputs\"]}\n"
       "r = [[int(x) for x in l.split()] for l in open(\"members.ranges\")]\n"
       "want = {\"m1.csv\": [], \"m2.csv\": [], \"m3.csv\": [], \"x.csv\": [x for x in r if x[1] <= n1],\n"
       "        \"y.csv\": [[a - n1, b - n1] for a, b in r if a >= n1]}\n"
       "ok = len(r) == 2 and got == want and want[\"x.csv\"] and want[\"y.csv\"]\n"
       "sys.exit(0 if ok else \"lost_rows %%s, want %%s\" %% (got, want))' $n1 && "
       "rows_of D | LC_ALL=C sort > got.rows && rows_in m1.csv m2.csv m3.csv x.csv y.csv | LC_ALL=C sort > all.rows && "
       "LC_ALL=C comm -23 all.rows lost.rows > want.rows && cmp got.rows want.rows && "
       "\"$RS\" bucket --quiet --memory 32M --append -o D y.csv x.csv && "
       "rows_of D | LC_ALL=C sort > got.rows && cmp got.rows all.rows && \"$RS\" verify --quiet D && "
       "test -d D/g00000005 && \"$RS\" bucket --quiet --append -o D x.csv y.csv && test ! -e D/g00000006");
}

/* The same of a dedup --append generation of two inputs: pass 2 counts
 * the rows it keeps of each input (through the history filter), and its
 * members, cut by size, may span the two inputs: a damaged member's rows
 * are recorded as each input's they are (the boundary: x.csv's rows kept
 * on node 2 when appended alone onto the same history); appending both
 * brings every row back, once. */
Test(repair_members, a_damaged_member_of_a_dedup_generation_of_two_inputs_is_each_inputs_rows)
{
    OK(GEN " --rows 30000 --seed 9 --newline-share 0 -o x.csv 2>/dev/null && "
       GEN " --rows 30000 --seed 10 --newline-share 0 -o y.csv 2>/dev/null && "
       "rm -rf F X && cp -a MH F && cp -a MH X && \"$RS\" dedup --quiet --memory 32M --append -o F x.csv y.csv && "
       "\"$RS\" dedup --quiet --memory 32M --append -o X x.csv && "
       "n1=$(dec x.gz < X/g00000004/2.csv.gz | tail -n +2 | wc -l) && "
       "grep -q \"\\\"runs\\\": \\\"0:0-$n1 1:0-\" F/g00000004/manifest.json && "
       "rows_of F | LC_ALL=C sort > before.rows && "
       "rm -rf D D.* && cp -a F D && flip_byte D/g00000004/2.csv.gz $(( $(stat -c %%s D/g00000004/2.csv.gz) / 6 )) && "
       "{ \"$RS\" repair D > r.out; test $? = 3; } && "
       "grep -q '^NOT KEPT D/g00000004/2.csv.gz: .*: 1 of its [0-9]* gzip members damaged.*an append ingests again: ' "
       "r.out && \"$RS\" verify --quiet D && "
       "members_lost F/g00000004/2.csv.gz D.damaged.1/g00000004/2.csv.gz | LC_ALL=C sort > lost.rows && "
       "python3 -c 'import json, sys\n"
       "n1 = int(sys.argv[1]); m = json.load(open(\"D/manifest.json\"))\n"
       "got = {i[\"path\"]: [[r[\"from\"], r[\"to\"]] for r in i.get(\"lost_rows\", [])] for i in m[\"inputs\"]}\n"
       "r = [[int(x) for x in l.split()] for l in open(\"members.ranges\")]\n"
       "want = {\"m1.csv\": [], \"m2.csv\": [], \"m3.csv\": [], \"x.csv\": [[a, min(b, n1)] for a, b in r if a < n1],\n"
       "        \"y.csv\": [[max(a, n1) - n1, b - n1] for a, b in r if b > n1]}\n"
       "ok = len(r) == 1 and got == want\n"
       "sys.exit(0 if ok else \"lost_rows %%s, want %%s\" %% (got, want))' $n1 && "
       "rows_of D | LC_ALL=C sort > got.rows && LC_ALL=C comm -23 before.rows lost.rows > want.rows && "
       "cmp got.rows want.rows && \"$RS\" dedup --quiet --memory 32M --append -o D y.csv x.csv && "
       "rows_of D | LC_ALL=C sort > got.rows && cmp got.rows before.rows && \"$RS\" verify --quiet D && "
       "test -d D/g00000005 && \"$RS\" dedup --quiet --append -o D x.csv y.csv && test ! -e D/g00000006");
}

/* The member of a file's header line damaged (of the base: its merged
 * file starts with the header line written anew from the manifest; of a
 * segment, whose header line is not copied): every row kept, exit 0. */
Test(repair_members, a_damaged_header_member_costs_no_row)
{
    OK("for c in 'Mgzip 2.csv.gz 50' 'Mzstd g00000002/2.csv.zst 60'; do set -- $c; n=${2##*/}; "
       "rm -rf D D.* && cp -a $1 D && flip_byte D/$2 $3 && { \"$RS\" verify D > v.out; test $? = 3; } && "
       "\"$RS\" repair D > r.out && grep -q \"^KEPT D/$2: every row of node .*: the member of its header line "
       "damaged\" r.out && ! grep -q '^NOT KEPT' r.out && \"$RS\" verify --quiet D && "
       "rows_of D | LC_ALL=C sort > got.rows && rows_in m1.csv m2.csv m3.csv | LC_ALL=C sort > all.rows && "
       "cmp got.rows all.rows && dec $n < D/$n | head -n 1 > h1 && head -n 1 m1.csv > h0 && cmp h0 h1 && "
       "case $n in *.gz) python3 " RS_SOURCE_DIR "/tests/check_members.py D/$n | grep -q '^ok' ;; esac || exit 1; "
       "done");
}

/* The append that brings back a damaged member's rows writes the same
 * bytes whatever the threads (the rows chosen in the ordered write stage),
 * and the record outlives an append of another input and a compact. */
Test(repair_members, the_rows_brought_back_do_not_depend_on_the_threads)
{
    OK(GEN " --rows 500 --seed 9 --newline-share 0 --dup-share 0 -o x.csv 2>/dev/null && "
       "rm -rf D D.* && cp -a Mgzip D && flip D/g00000002/2.csv.gz && flip D/3.csv.gz && "
       "{ \"$RS\" repair --quiet D > r.out; test $? = 3; } && test $(grep -c '^NOT KEPT .* gzip members damaged' r.out) = 2 && "
       "\"$RS\" bucket --quiet --memory 32M --append -o D x.csv && \"$RS\" compact --quiet D && "
       "rm -rf E1 E4 && cp -a D E1 && cp -a D E4 && "
       "\"$RS\" bucket --quiet -j 1 --memory 32M --append -o E1 m2.csv m1.csv && "
       "\"$RS\" bucket --quiet -j 4 --memory 32M --append -o E4 m2.csv m1.csv && "
       "for f in E1/g*/*.csv.gz; do cmp $f E4/${f#E1/} || exit 1; done && "
       "rows_of E4 | LC_ALL=C sort > got.rows && rows_in m1.csv m2.csv m3.csv x.csv | LC_ALL=C sort > all.rows && "
       "cmp got.rows all.rows && \"$RS\" verify --quiet E4 && \"$RS\" compact --quiet E4 && "
       "\"$RS\" bucket --append -o E4 m1.csv m2.csv 2> s.err && test $(grep -c 'already ingested' s.err) -ge 2 && "
       "rows_of E4 | LC_ALL=C sort > got.rows && cmp got.rows all.rows");
}

/* What a file lost whole held is what is recorded: the segment of an
 * append that brought back a damaged member's rows, damaged in its turn,
 * loses those rows only (lost_rows: the ranges it restored, not the whole
 * node, whose other rows the base holds); a plain file of a generation
 * of two inputs is lost whole (a plain file has no per-member checks),
 * every input's rows of the node recorded (`lost`), though its runs are
 * known; appending the inputs brings every row back, once. */
Test(repair_members, a_file_lost_whole_records_the_rows_it_held)
{
    OK(GEN " --rows 30000 --seed 9 --newline-share 0 --dup-share 0 -o x.csv 2>/dev/null && "
       "rm -rf D D.* && cp -a Mgzip D && flip D/g00000003/1.csv.gz && { \"$RS\" repair --quiet D > r.out; test $? = 3; } && "
       "\"$RS\" bucket --quiet --memory 32M --append -o D m3.csv && test -f D/g00000004/1.csv.gz && "
       "rm -rf E E.* && cp -a D E && flip E/g00000004/1.csv.gz && "
       "{ \"$RS\" repair E > r2.out; test $? = 3; } && grep -q '^NOT KEPT E/g00000004/1.csv.gz: ' r2.out && "
       "python3 -c 'import json; m = json.load(open(\"E/manifest.json\")); "
       "ins = [i for i in m[\"inputs\"] if i[\"path\"] == \"m3.csv\"]; "
       "r = lambda e, k: [[x[\"from\"], x[\"to\"]] for x in e.get(k, [])]; want = r(ins[-1], \"restored_rows\"); "
       "ok = len(ins) == 2 and want and r(ins[1], \"lost_rows\") == want and \"lost\" not in ins[1] and "
       "r(ins[0], \"lost_rows\") == want; raise SystemExit(0 if ok else str(ins))' && "
       "\"$RS\" bucket --quiet --memory 32M --append -o E m3.csv && "
       "rows_of E | LC_ALL=C sort > got.rows && rows_in m1.csv m2.csv m3.csv | LC_ALL=C sort > all.rows && "
       "cmp got.rows all.rows && \"$RS\" bucket --quiet --append -o E m3.csv && test ! -e E/g00000006 && "
       GEN " --rows 30000 --seed 10 --newline-share 0 --dup-share 0 -o y.csv 2>/dev/null && "
       "rm -rf F F.* && \"$RS\" bucket --quiet --memory 32M --compress none --key bill_id --nodes 4 -o F m1.csv && "
       "\"$RS\" bucket --quiet --memory 32M --append -o F x.csv y.csv && grep -q '\"runs\"' F/g00000002/manifest.json && "
       "flip F/g00000002/2.csv && { \"$RS\" repair F > r3.out; test $? = 3; } && "
       "grep -q '^NOT KEPT F/g00000002/2.csv: [0-9]* rows of node 2, of generation 2 (its other files kept); the "
       "inputs whose rows of node 2 an append ingests again: x.csv, y.csv$' r3.out && \"$RS\" verify --quiet F && "
       "python3 -c 'import json; m = json.load(open(\"F/manifest.json\")); "
       "ok = [[x[\"node\"] for x in i.get(\"lost\", [])] for i in m[\"inputs\"]] == [[], [\"2\"], [\"2\"]]; "
       "raise SystemExit(0 if ok else str(m[\"inputs\"]))' && "
       "\"$RS\" bucket --quiet --memory 32M --append -o F y.csv x.csv && rows_of F | LC_ALL=C sort > got.rows && "
       "rows_in m1.csv x.csv y.csv | LC_ALL=C sort > all.rows && cmp got.rows all.rows && "
       "test -d F/g00000003 && \"$RS\" bucket --quiet --append -o F x.csv y.csv && test ! -e F/g00000004");
}

/* SIGKILL at the Nth call of each publishing system call of repair
 * (strace fault injection, N = 1, 2, ... until it completes): D is at
 * every kill the damaged directory or the repaired one, never missing;
 * the damaged one is never removed (held at a name no run removes, then
 * D.damaged.1); and the next append (bucket, dedup), compact and repair
 * each go on from D or refuse with exit 2 saying where the held directory
 * is, never making a new D. Without RENAME_EXCHANGE, D is missing between
 * the two renames, and every next run refuses then, making none. */
Test(repair, sigkill_at_every_publishing_call)
{
    SH_OK("rm -rf B && cp -a Wgzip B && rm -rf B/g00000002");
    cmd_result r = sh(REPAIR_SWEEP "'rename renameat renameat2 mkdir fsync'");
    cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
    /* killed before, while and after the exchange; never without D */
    cr_assert(strstr(r.out, " none=0 ") && !strstr(r.out, " damaged=0 ") && !strstr(r.out, " repaired=0 ") &&
              !strstr(r.out, " held=0 "), "%s", r.out);
    cmd_result_free(&r);
    r = sh("export RINGSHARD_TEST_NO_EXCHANGE=1 && " REPAIR_SWEEP "'rename renameat renameat2'");
    cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
    cr_assert(!strstr(r.out, " none=0 "), "%s", r.out);
    cmd_result_free(&r);
}

/* The state an earlier version's repair left when killed between its two
 * renames: no D, D.damaged.1, and the complete repaired directory at a
 * temporary's name. The next append does not make a new D nor remove the
 * repaired one: it refuses (exit 2) saying how to put it in place; once
 * put there, the append goes on from it. */
Test(repair, a_repaired_directory_left_at_a_temporary_name_is_never_removed)
{
    OK("rm -rf D D.* && cp -a Wgzip D && rm -rf D/g00000002 && { \"$RS\" repair --quiet D > /dev/null; test $? = 3; } && "
       "mv D D.ringshard-tmp.999999.0badf00d && snap D.ringshard-tmp.999999.0badf00d raw > t.snap && "
       "for c in 'bucket --quiet --append -o D in4.csv' 'dedup --quiet --append -o D in4.csv' 'compact D' 'repair D'; do "
       "  \"$RS\" $c > /dev/null 2> next.err; rc=$?; test $rc = 2 || { echo \"$c: exit $rc\"; cat next.err; exit 1; }; "
       "  grep -q 'mv ./D.ringshard-tmp.999999.0badf00d ./D' next.err || { cat next.err; exit 1; }; "
       "  ! test -e D && [ \"$(snap D.ringshard-tmp.999999.0badf00d raw)\" = \"$(cat t.snap)\" ] || exit 1; "
       "done && mv D.ringshard-tmp.999999.0badf00d D && \"$RS\" bucket --quiet --append -o D in4.csv && "
       "\"$RS\" verify --quiet D && test $(rows_of D | wc -l) = 3000");
}

/* A base manifest that lists a file twice: verify names it (3), every
 * reader, append and compact refuse it (2), and repair too, saying which
 * entry to remove: the base's nodes cannot be told apart. D byte for
 * byte throughout; once the entry is removed, D verifies. */
Test(repair, a_base_that_lists_a_file_twice_is_refused_with_what_to_do)
{
    OK("rm -rf D D.* && cp -a Wgzip D && rm -rf D/g00000002 D/g00000003 && \"$RS\" verify --quiet D && "
       "list_twice D/manifest.json && snap D raw > t.snap && "
       "{ \"$RS\" verify D > v.out; test $? = 3; } && grep -q 'DIFF D: manifest.json: file 0.csv.gz is listed twice' v.out && "
       "for c in 'cat D --all' 'bucket --quiet --append -o D in4.csv' 'compact D' 'repair D'; do "
       "  \"$RS\" $c > /dev/null 2> next.err; rc=$?; test $rc = 2 || { echo \"$c: exit $rc\"; cat next.err; exit 1; }; "
       "  [ \"$(snap D raw)\" = \"$(cat t.snap)\" ] && ! test -e D.damaged.1 || { echo \"$c changed D\"; exit 1; }; "
       "done && grep -q 'D/manifest.json lists 0.csv.gz twice: repair cannot tell' next.err && "
       "python3 -c 'import json; p = \"D/manifest.json\"; m = json.load(open(p)); f = m[\"files\"].pop(); t = m[\"totals\"]; "
       "t[\"rows\"] -= f[\"rows\"]; t[\"bytes\"] -= f[\"bytes\"]; t[\"files\"] = len(m[\"files\"]); "
       "open(p, \"w\").write(json.dumps(m, indent=2) + \"\\n\")' && \"$RS\" verify --quiet D");
}

/* A base file whose node its ring does not have (a node name edited): the
 * ring places its rows elsewhere. verify names it (3), every reader,
 * append and compact refuse it (2), and repair too, saying what to
 * correct: which node's rows the file holds is not its to guess. D byte
 * for byte throughout; with the node put back, D verifies. */
Test(repair, a_base_file_of_a_node_not_in_the_ring_is_refused_with_what_to_do)
{
    OK("rm -rf D D.* && cp -a Wgzip D && rm -rf D/g00000002 D/g00000003 && "
       "python3 -c 'import json; p = \"D/manifest.json\"; m = json.load(open(p)); f = m[\"files\"][1]; "
       "open(\"orig.node\", \"w\").write(f[\"node\"]); f[\"node\"] = \"zz\"; "
       "open(p, \"w\").write(json.dumps(m, indent=2) + \"\\n\")' && snap D raw > t.snap && "
       "{ \"$RS\" verify D > v.out; test $? = 3; } && "
       "grep -q \"DIFF D: manifest.json: file 1.csv.gz belongs to node 'zz', which its ring does not have\" v.out && "
       "for c in 'cat D zz' 'stats D' 'bucket --quiet --append -o D in4.csv' 'compact D' 'repair D'; do "
       "  \"$RS\" $c > /dev/null 2> next.err; rc=$?; test $rc = 2 || { echo \"$c: exit $rc\"; cat next.err; exit 1; }; "
       "  [ \"$(snap D raw)\" = \"$(cat t.snap)\" ] && ! test -e D.damaged.1 || { echo \"$c changed D\"; exit 1; }; "
       "done && grep -q \"which its ring does not have: repair cannot tell which node's rows it holds\" next.err && "
       "python3 -c 'import json; p = \"D/manifest.json\"; m = json.load(open(p)); m[\"files\"][1][\"node\"] = open(\"orig.node\").read(); "
       "open(p, \"w\").write(json.dumps(m, indent=2) + \"\\n\")' && \"$RS\" verify --quiet D");
}

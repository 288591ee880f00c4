/* compact checks every byte it copies (docs/compact.md, "Every file is
 * checked"): a data file or key index damaged in a way its size does not
 * show - a bit flipped anywhere in the bytes compact would copy, of a base
 * file or a segment, gzip, zstd or plain - is refused with exit 2 naming
 * the file, and DIR is byte for byte what it was (`snap DIR raw`,
 * tests/append_lib.sh, and no temporary left); bytes appended, a file cut
 * short and a key index missing, cut short or flipped too. --no-check
 * copies as compact always did (the damaged bytes included, as the
 * concatenation of the parts made with tail and cat says), and on an
 * undamaged directory the checked and unchecked runs, on one thread or
 * two, write the same bytes. With the CRC-32 of each file's stored bytes
 * in its manifest (stored_crc32), compact checks those instead of decoding
 * (a flip anywhere, a segment's header line included, is refused naming
 * stored_crc32); a directory whose manifests have none (as versions before
 * 0.3.0 wrote them: tests/old_stored.py), or some of its generations, is
 * checked by decoding as before, and every merged file gets its
 * stored_crc32, the CRC-32 of its bytes as Python's zlib computes it. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
#define LIB WAIT_SH APPEND_LIB CHECK_SH
#define OK(...) SH_OK(LIB __VA_ARGS__)

/* flip FILE OFFSET: bit 0 of the byte at OFFSET inverted, in place.
 * tree DIR: its entries and every file's CRC (one cksum for all).
 * refused NAME FILE: runs compact on the damaged directory D and says on
 * stdout what went wrong unless it exits 2 naming D/FILE and leaves D as
 * it was, temporaries included (litter, tests/append_lib.sh).
 * The sweeps of many flips run in one process, tests/flip_sweep.py. */
#define CHECK_SH                                                                                           \
    "flip() { perl -e 'open(my $f, \"+<\", $ARGV[0]) or die \"$ARGV[0]: $!\"; seek($f, $ARGV[1], 0); "      \
    "read($f, my $b, 1) == 1 or die \"$ARGV[0]: no byte at $ARGV[1]\"; seek($f, $ARGV[1], 0); "                \
    "print $f chr(ord($b) ^ 1); close($f) or die' \"$1\" \"$2\"; }; "                                          \
    "tree() { (cd \"$1\" && find . | LC_ALL=C sort && find . -type f | LC_ALL=C sort | xargs cksum); }; "  \
    "refused() { tree D > before.t; \"$RS\" compact D > out.t 2> err.t; rc=$?; "                            \
    "if [ $rc != 2 ]; then echo \"$1: exit $rc, want 2: $(cat err.t)\"; "                                 \
    "elif ! grep -qF \"D/$2: \" err.t; then echo \"$1: D/$2 not named: $(cat err.t)\"; "                    \
    "elif [ \"$(tree D)\" != \"$(cat before.t)\" ] || [ $(litter D) != 0 ]; then "                          \
    "echo \"$1: D changed\"; fi; }; "                                                                     \
    "stored_ok() { python3 -c 'import json, os, sys, zlib\n"                                              \
    "for m in sys.argv[1:]:\n"                                                                             \
    "    for f in json.load(open(m))[\"files\"]:\n"                                                         \
    "        b = open(os.path.join(os.path.dirname(m), f[\"file\"]), \"rb\").read()\n"                      \
    "        assert f[\"stored_crc32\"] == zlib.crc32(b), (m, f[\"file\"])' \"$@\"; }; "

/* G, Z, P: a bucket directory of 3 generations (the base, then 2 appends
 * of 200 rows, some with a line break inside a quoted field) over 4
 * nodes, gzip, zstd and plain; X: the same rows by dedup --append, with
 * key indexes. */
static void compact_fixture(void)
{
    test_dir_setup();
    SH_OK("for i in 1 2 3; do " GEN " --rows 200 --seed $i --newline-share 0.05 -o in$i.csv 2>/dev/null || exit 1; "
          "done; for c in G:gzip Z:zstd P:none; do d=${c%%:*}; "
          "\"$RS\" bucket --quiet --key bill_id --nodes 4 --compress ${c#*:} -o $d in1.csv && "
          "\"$RS\" bucket --quiet --append -o $d in2.csv && \"$RS\" bucket --quiet --append -o $d in3.csv && "
          "\"$RS\" verify --quiet $d && test -d $d/g00000003 || exit 1; done && "
          "\"$RS\" dedup --quiet --append --key bill_id --nodes 4 -o X in1.csv && "
          "\"$RS\" dedup --quiet --append -o X in2.csv && \"$RS\" dedup --quiet --append -o X in3.csv && "
          "\"$RS\" verify --quiet X && test -f X/g00000003/3.keyidx");
}

TestSuite(compact_check, .init = compact_fixture, .fini = test_dir_teardown, .timeout = 900);

/* A bit flipped in every 3rd of the first 48 bytes compact reads of a
 * file (a piece's header: each of its fields, what no decoder reads), then
 * at 12 points between (every 97th byte at least), and in every 2nd of its
 * last 12 (a gzip trailer, a zstd checksum), of node 3's base file and of
 * its segment of generation 2, in each codec: refused, naming the file, D
 * as it was. (Checked by the stored bytes' CRC-32, which covers every byte
 * alike, every 8th, 6 points and every 4th are enough.) With stored_crc32 in
 * the manifests (old 0), by it (the message says so), from a segment's
 * first byte: its header line is read, though not copied; without
 * (tests/old_stored.py), by decoding, from the end of a segment's header
 * line (its first header_bytes are not read). */
static void flip_sweep(int old)
{
    static const char *const dirs[][2] = {{"G", "gz"}, {"Z", "zst"}, {"P", ""}};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        const char *d = dirs[i][0], *ext = dirs[i][1], *dot = *ext ? "." : "";
        cmd_result r = sh(LIB "old=%d; if [ $old = 1 ]; then shape='--head-step 4 --points 8 --tail-step 3 --least 16' "
                              "by='--stderr-lacks'; else shape='--head-step 8 --points 6 --tail-step 4 --least 10' "
                              "by='--stderr-has'; fi; rm -rf D && cp -a %s D && "
                              "if [ $old = 1 ]; then python3 '" RS_SOURCE_DIR "/tests/old_stored.py' D || exit 1; "
                              "else stored_ok D/manifest.json D/g*/manifest.json || exit 1; fi; "
                              "for f in 3.csv%s%s g00000002/3.csv%s%s; do "
                              "from=0; case $old$f in 1g*) from=$(seg_header_bytes D/${f%%/*} ${f#*/});; esac; "
                              "python3 '" RS_SOURCE_DIR "/tests/flip_sweep.py' D $f --from $from $shape "
                              "$by 'stored_crc32 says' -- \"$RS\" compact D || exit 1; done",
                          old, d, dot, ext, dot, ext);
        cr_assert_eq(r.rc, 0, "%s: exit %d\n%s", d, r.rc, r.err);
        cr_assert_str_empty(r.out, "%s:\n%s", d, r.out);
        cmd_result_free(&r);
    }
}

Test(compact_check, a_flipped_bit_in_a_data_file_is_refused)
{
    flip_sweep(0);
}

Test(compact_check, a_flipped_bit_is_refused_by_decoding_without_stored_crc32)
{
    flip_sweep(1);
}

/* Bytes appended to a file, or a file cut short (the base's and a
 * segment's), in each codec: refused as a damaged chain is, naming it. */
Test(compact_check, a_file_grown_or_cut_short_is_refused)
{
    static const char *const dirs[][2] = {{"G", ".gz"}, {"Z", ".zst"}, {"P", ""}};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        cmd_result r = sh(LIB "rm -rf M && cp -a %s M && "
                              "for f in 2.csv%s g00000003/2.csv%s; do "
                              "rm -rf D; cp -a M D; printf 'x,1\\n' >> D/$f; refused \"$f grown\" $f; "
                              "rm -rf D; cp -a M D; truncate -s -1 D/$f; refused \"$f cut\" $f; done",
                          dirs[i][0], dirs[i][1], dirs[i][1]);
        cr_assert_eq(r.rc, 0, "%s: exit %d\n%s", dirs[i][0], r.rc, r.err);
        cr_assert_str_empty(r.out, "%s:\n%s", dirs[i][0], r.out);
        cmd_result_free(&r);
    }
}

/* Key indexes (X): a segment's index and the base's missing, cut short,
 * grown, and a bit flipped at 24 points of each, every 41st byte at least (its header, filter
 * lines, range table and chunks: the merge reads only the chunks, compact
 * checks the rest against the manifest's CRC-32): refused, naming the
 * index, X as it was. */
Test(compact_check, a_damaged_key_index_is_refused)
{
    cmd_result r = sh(LIB "rm -rf M && cp -a X M && "
                          "for f in g00000002/3.keyidx 3.keyidx; do "
                          "rm -rf D; cp -a M D; rm D/$f; refused \"$f missing\" $f; "
                          "rm -rf D; cp -a M D; truncate -s -1 D/$f; refused \"$f cut\" $f; "
                          "rm -rf D; cp -a M D; echo x >> D/$f; refused \"$f grown\" $f; "
                          "step=$(($(wc -c < M/$f) / 24)); [ $step -ge 41 ] || step=41; "
                          "rm -rf D && cp -a M D && python3 '" RS_SOURCE_DIR "/tests/flip_sweep.py' D $f "
                          "--head-step $step --points 24 --min-step 41 --tail-step $step --least 11 -- \"$RS\" compact D || exit 1; "
                          "done");
    cr_assert_eq(r.rc, 0, "exit %d\n%s", r.rc, r.err);
    cr_assert_str_empty(r.out, "%s", r.out);
    cmd_result_free(&r);
}

/* On an undamaged directory, in each codec and with key indexes: compact
 * (two threads, one) and compact --no-check write the same bytes, manifest
 * included; each merged file is its node's parts concatenated (cat_parts,
 * tests/append_lib.sh: tail and cat), and the result verifies. Then once
 * more after another append: a compacted base file is checked as any. */
Test(compact_check, checked_and_unchecked_write_the_same_bytes)
{
    OK(GEN " --rows 100 --seed 4 -o in4.csv 2>/dev/null && for d in G Z P X; do rm -rf A B C R; "
       "cp -a $d A && cp -a $d B && cp -a $d C && cat_parts $d R && rm -f R/*.keyidx && "
       "OMP_NUM_THREADS=2 \"$RS\" compact --quiet A && OMP_NUM_THREADS=1 \"$RS\" compact --quiet B && "
       "\"$RS\" compact --quiet --no-check C && "
       "[ \"$(snap A raw)\" = \"$(snap B raw)\" ] && [ \"$(snap A raw)\" = \"$(snap C raw)\" ] && "
       "same_parts A R && \"$RS\" verify --quiet A || { echo \"$d: differ\"; exit 1; }; "
       "w=bucket; [ $d = X ] && w=dedup; rm -rf B C && \"$RS\" $w --quiet --append -o A in4.csv && "
       "test -d A/g00000004 && cp -a A C && \"$RS\" compact --quiet A && \"$RS\" compact --quiet --no-check C && "
       "[ \"$(snap A raw)\" = \"$(snap C raw)\" ] && \"$RS\" verify --quiet A || { echo \"$d: again\"; exit 1; }; "
       "done");
}

/* --no-check keeps what compact did before it checked: a file whose bytes
 * changed but not its size is merged into its node's base file (exit 0,
 * the merged file its parts concatenated, damage included), and verify
 * then finds the node's data wrong; the checked run refuses the same
 * directory. */
Test(compact_check, no_check_merges_a_damaged_file_as_before)
{
    OK("rm -rf M D R && cp -a G M && o=$(( $(wc -c < M/g00000002/3.csv.gz) - 6 )) && "
       "flip M/g00000002/3.csv.gz $o && cp -a M D && refused flipped g00000002/3.csv.gz | "
       "grep . && exit 1; grep -q 'CRC-32' err.t && cat_parts M R && \"$RS\" compact --quiet --no-check D && "
       "same_parts D R && { \"$RS\" verify --quiet D; test $? = 3; }");
}

/* Two damaged nodes (1 and 3): the first in node order is named whatever
 * the threads (OMP_NUM_THREADS 1 and 2, three runs each). */
Test(compact_check, the_first_damaged_node_is_named_on_any_thread_count)
{
    OK("rm -rf M && cp -a G M && flip M/g00000002/3.csv.gz $(($(seg_header_bytes M/g00000002 3.csv.gz) + 60)) && "
       "flip M/g00000003/1.csv.gz $(($(seg_header_bytes M/g00000003 1.csv.gz) + 60)) && "
       "for t in 1 2 1 2 2 2; do rm -rf D; cp -a M D; "
       "OMP_NUM_THREADS=$t refused \"threads $t\" g00000003/1.csv.gz | grep . && exit 1; done; true");
}

/* Manifests without stored_crc32 (tests/old_stored.py: as 0.2 wrote them,
 * the chain's digests made again): a flip in a base file and in a segment
 * is refused by decoding (gzip's own CRC-32, or the data's against crc32),
 * not by a stored CRC; undamaged, the checked compact writes what it
 * writes from new manifests, byte for byte, manifest included (stored_crc32
 * of the bytes it wrote). Then one generation more, appended by this
 * version (with stored_crc32), beside the old ones: a flip in the new
 * segment is refused by its stored CRC, one in an old segment by decoding,
 * and --no-check, which cannot derive it from parts that have none, writes
 * no stored_crc32. */
Test(compact_check, an_old_manifest_without_stored_crc32_is_checked_by_decoding)
{
    OK(GEN " --rows 100 --seed 4 -o in4.csv 2>/dev/null && rm -rf M N && cp -a G M && cp -a G N && "
       "python3 '" RS_SOURCE_DIR "/tests/old_stored.py' M && ! grep -q stored_crc32 M/manifest.json M/g*/manifest.json && "
       "\"$RS\" verify --quiet M && "
       "for f in 3.csv.gz g00000002/3.csv.gz; do o=60; case $f in g*) o=$(($(seg_header_bytes M/g00000002 3.csv.gz) + 60));; "
       "esac; rm -rf D; cp -a M D; flip D/$f $o; refused \"$f@$o\" $f | grep . && exit 1; "
       "grep -q stored_crc32 err.t && { cat err.t; exit 1; }; grep -qE 'gzip member|CRC-32' err.t || { cat err.t; exit 1; }; "
       "done; "
       "rm -rf D && cp -a M D && \"$RS\" compact --quiet D && \"$RS\" compact --quiet N && "
       "[ \"$(snap D raw)\" = \"$(snap N raw)\" ] && stored_ok D/manifest.json && "
       "\"$RS\" bucket --quiet --append -o M in4.csv && grep -q stored_crc32 M/g00000004/manifest.json && "
       "! grep -q stored_crc32 M/g00000002/manifest.json && "
       "rm -rf D && cp -a M D && flip D/g00000004/3.csv.gz 30 && refused new g00000004/3.csv.gz | grep . && exit 1; "
       "grep -q 'stored_crc32 says' err.t || { cat err.t; exit 1; }; "
       "rm -rf D && cp -a M D && flip D/g00000002/3.csv.gz $(($(seg_header_bytes M/g00000002 3.csv.gz) + 60)) && "
       "refused old g00000002/3.csv.gz | grep . && exit 1; grep -q stored_crc32 err.t && { cat err.t; exit 1; }; "
       "rm -rf D && cp -a M D && \"$RS\" compact --quiet D && stored_ok D/manifest.json && \"$RS\" verify --quiet D && "
       "rm -rf D && cp -a M D && \"$RS\" compact --quiet --no-check D && ! grep -q stored_crc32 D/manifest.json && "
       "\"$RS\" verify --quiet D");
}

/* Every merged file's stored_crc32 is the CRC-32 of its bytes (Python's
 * zlib), whether compact wrote them (checked) or copied them in the kernel
 * (--no-check: combined from its parts'), in each codec and with key
 * indexes. */
Test(compact_check, merged_files_get_the_crc32_of_their_stored_bytes)
{
    OK("for d in G Z P X; do rm -rf A C && cp -a $d A && cp -a $d C && \"$RS\" compact --quiet A && "
       "\"$RS\" compact --quiet --no-check C && stored_ok A/manifest.json && stored_ok C/manifest.json || "
       "{ echo \"$d: wrong\"; exit 1; }; done");
}

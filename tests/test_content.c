/* An input known by its content in every form, and appends whose header
 * is spelled otherwise: `bucket --append` and `dedup --append` with one CSV
 * given as plain, gzip -1 and -9, pigz, bgzip, two gzip members, a
 * ringshard-written multi-member gzip read in units, zstd from a file and
 * from a pipe (no content size in its frame), several zstd -19 frames, and
 * standard input, one after the other in both orders and all in one
 * command, with --producers 1 and 2. DIR's rows are read with Python's
 * gzip, zstandard and csv modules (tests/check_rows.py) against the CSV
 * (multiset equality), and DIR byte for byte (snap, tests/append_lib.sh);
 * the content checksum against a CRC-64/XZ computed in Python. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
#define LIB WAIT_SH APPEND_LIB
#define CHECK_ROWS "python3 " RS_SOURCE_DIR "/tests/check_rows.py "
#define OK(...) SH_OK(LIB __VA_ARGS__)

/* Every form of day.csv, in the order of the forward runs; "-" is standard
 * input (a pipe: every command is fed day.csv by cat). rs.csv.gz is a
 * bucket file of one node (gzip members with ringshard's headers), read in
 * units of 64 kB (RINGSHARD_UNIT_BYTES), split between lanes by
 * --producers 2. */
#define FORMS "day.csv g1.csv.gz g9.csv.gz pz.csv.gz bg.csv.gz two.csv.gz zf.csv.zst zp.csv.zst zm.csv.zst rs.csv.gz -"

/* day.csv (4000 bills, quoted fields with line breaks) in every form;
 * new.csv, other bills. */
static void forms(void)
{
    test_dir_setup();
    SH_OK(LIB "command -v bgzip >/dev/null || { echo 'bgzip missing: run tools/deps.sh (Debian package tabix)' >&2; "
          "exit 1; }; "
          GEN " --rows 4000 --seed 11 --newline-share 0.01 -o day.csv 2>/dev/null && "
          GEN " --rows 700 --seed 12 -o new.csv 2>/dev/null && "
          "gzip -1 -c day.csv > g1.csv.gz && gzip -9 -n -c day.csv > g9.csv.gz && pigz -c day.csv > pz.csv.gz && "
          "bgzip -c day.csv > bg.csv.gz && "
          "head -c 100001 day.csv | gzip -c > two.csv.gz && tail -c +100002 day.csv | gzip -c >> two.csv.gz && "
          "zstd -q -c day.csv > zf.csv.zst && zstd -q < day.csv > zp.csv.zst && "
          "head -c 150000 day.csv | zstd -q -19 -c > zm.csv.zst && "
          "tail -c +150001 day.csv | head -c 150000 | zstd -q -19 -c >> zm.csv.zst && "
          "tail -c +300001 day.csv | zstd -q -19 -c >> zm.csv.zst && "
          "test $(wc -c < day.csv) -gt 300001 && "
          "\"$RS\" bucket --quiet --nodes 1 --memory 32M -o one day.csv && cp one/0.csv.gz rs.csv.gz && rm -r one && "
          "test $(python3 -c 'print(open(\"rs.csv.gz\", \"rb\").read().count(b\"\\x1f\\x8b\\x08\"))') -ge 3 && "
          "for f in " FORMS "; do [ $f = - ] || dec $f < $f | cmp -s - day.csv || { echo \"$f: not day.csv\"; "
          "exit 1; }; done && "
          /* the pipe's zstd frame declares no content size, the file's does */
          "python3 -c 'import sys\n"
          "for f, want in ((\"zp.csv.zst\", 0), (\"zf.csv.zst\", 1)):\n"
          "    d = open(f, \"rb\").read(); fhd = d[4]\n"
          "    has = (fhd >> 6) != 0 or (fhd & 0x20) != 0\n"
          "    assert has == bool(want), f'");
}

/* --producers p, with the memory two lanes need to fit (2G) */
static const char *producers(int p)
{
    return p == 2 ? "--producers 2 --memory 2G" : "--producers 1";
}

TestSuite(content, .init = forms, .fini = test_dir_teardown, .timeout = 900);

/* CRC-64/XZ of day.csv, computed here (Python, a table by bytes), as the
 * manifest writes it. */
#define CRC64_PY                                                                                              \
    "python3 -c 'import sys\n"                                                                                \
    "t = []\n"                                                                                                \
    "for n in range(256):\n"                                                                                  \
    "    c = n\n"                                                                                             \
    "    for _ in range(8): c = (c >> 1) ^ 0xC96C5795D7870F42 if c & 1 else c >> 1\n"                        \
    "    t.append(c)\n"                                                                                       \
    "c = 0xFFFFFFFFFFFFFFFF\n"                                                                                \
    "for b in open(sys.argv[1], \"rb\").read(): c = t[(c ^ b) & 0xff] ^ (c >> 8)\n"                          \
    "print(\"crc64:%%016x\" %% (c ^ 0xFFFFFFFFFFFFFFFF))' "

/* Every form, ingested again and again (--on-seen again) in one command,
 * has one content checksum - day.csv's CRC-64/XZ - and day.csv's size,
 * whatever its compression, members or frames, and --producers. */
Test(content, every_form_has_the_content_checksum_of_the_csv)
{
    for (int p = 1; p <= 2; p++)
        OK("export RINGSHARD_UNIT_BYTES=65536; rm -rf A && "
           "cat day.csv | \"$RS\" bucket --quiet %s --nodes 3 --append --on-seen again -o A " FORMS " && "
           "test $(grep -c '\"path\"' A/manifest.json) = 11 && test $(grep -c '\"content\"' A/manifest.json) = 11 && "
           "want=$(" CRC64_PY "day.csv) && grep -o '\"content\": \"[^\"]*' A/manifest.json | sort -u > got && "
           "echo \"\\\"content\\\": \\\"$want\" | cmp - got && "
           "test $(grep -o '\"content_size\": [0-9]*' A/manifest.json | sort -u | wc -l) = 1 && "
           "grep -q \"\\\"content_size\\\": $(wc -c < day.csv)\" A/manifest.json",
           producers(p));
}

/* One form after another into DIR (CMD: bucket or dedup), forward with
 * P producers then backward with the other number: the first makes DIR,
 * each later one is skipped with a note and leaves DIR byte for byte, and
 * with --on-seen fail exits 73, nothing written; DIR's rows are day.csv's. */
static void one_after_another(const char *cmd, int p_forward)
{
    const char *rows = strcmp(cmd, "dedup") ? "" : "--first-by-key";
    for (int backward = 0, p = p_forward; backward < 2; backward++, p = 3 - p)
        OK("export RINGSHARD_UNIT_BYTES=65536; rm -rf D; order=\"" FORMS "\"; "
           "[ %d = 1 ] && order=$(for f in $order; do echo $f; done | tac); n=0; "
           "for f in $order; do "
           "  n=$((n + 1)); "
           "  if [ $n = 1 ]; then cat day.csv | \"$RS\" %s --quiet %s --nodes 4 --append -o D $f || exit 1; "
           "    snap D raw > s1; continue; fi; "
           "  cat day.csv | \"$RS\" %s %s --append -o D $f 2> err || { cat err; exit 1; }; "
           "  grep -q ': skipped$' err || { echo \"$f: not skipped\"; cat err; exit 1; }; "
           "  snap D raw | cmp -s - s1 || { echo \"$f: DIR changed\"; exit 1; }; "
           "  cat day.csv | \"$RS\" %s %s --append --on-seen fail -o D $f 2> err; rc=$?; "
           "  [ $rc = 73 ] && grep -q '(--on-seen fail); nothing written' err || "
           "    { echo \"$f: --on-seen fail: exit $rc\"; cat err; exit 1; }; "
           "  snap D raw | cmp -s - s1 && test $(litter D) = 0 || { echo \"$f: DIR changed by a refusal\"; exit 1; }; "
           "done && test ! -e D/g00000002 && test $(grep -c '\"path\"' D/manifest.json) = 1 && "
           CHECK_ROWS "D %s day.csv && \"$RS\" verify --quiet D",
           backward, cmd, producers(p), cmd, producers(p), cmd, producers(p), rows);
}

Test(content, bucket_append_ingests_each_form_once) { one_after_another("bucket", 1); }
Test(content, dedup_append_ingests_each_form_once) { one_after_another("dedup", 2); }

/* Every form in one command (CMD, P producers), forward and backward, into
 * a new DIR: one input ingested, the others skipped with a note; into a
 * DIR that holds day.csv with new.csv among them: only new.csv, in one
 * generation; --on-seen fail: exit 73, no DIR, nothing beside it. */
static void all_in_one_command(const char *cmd, int p)
{
    const char *rows = strcmp(cmd, "dedup") ? "" : "--first-by-key";
    OK("export RINGSHARD_UNIT_BYTES=65536; back=$(for f in " FORMS "; do echo $f; done | tac); "
       "for order in \"" FORMS "\" \"$back\"; do "
       "  rm -rf D; cat day.csv | \"$RS\" %s %s --nodes 4 --append -o D $order 2> err || "
       "    { cat err; exit 1; }; "
       "  test $(grep -c ': skipped$' err) = 10 && test $(grep -c '\"path\"' D/manifest.json) = 1 && "
       "  test ! -e D/g00000002 && test $(litter D) = 0 && " CHECK_ROWS "D %s day.csv || { cat err; exit 1; }; "
       "done && "
       "rm -rf D && \"$RS\" %s --quiet %s --nodes 4 --append -o D zp.csv.zst && "
       "cat day.csv | \"$RS\" %s %s --append -o D $back new.csv 2> err && "
       "test $(grep -c ': skipped$' err) = 11 && test -d D/g00000002 && test ! -e D/g00000003 && "
       "grep -q '\"path\": \"new.csv\"' D/g00000002/manifest.json && "
       "test $(grep -c '\"path\"' D/g00000002/manifest.json) = 1 && "
       CHECK_ROWS "D %s day.csv new.csv && \"$RS\" verify --quiet D && "
       "rm -rf N && cat day.csv | \"$RS\" %s %s --nodes 4 --append --on-seen fail -o N " FORMS
       " 2> err; test $? = 73 && grep -q '(--on-seen fail); nothing written' err && test ! -e N && "
       "test $(litter N) = 0",
       cmd, producers(p), rows, cmd, producers(p), cmd, producers(p), rows, cmd, producers(p));
}

/* (each command with the --producers the other's test above does not
 * start with) */
Test(content, bucket_all_forms_in_one_command_producers_2) { all_in_one_command("bucket", 2); }
Test(content, dedup_all_forms_in_one_command_producers_1) { all_in_one_command("dedup", 1); }

/* A pipe is read once. Held by DIR, or the same content as a file of the
 * same command, it is the input dropped (the file is kept, in whichever
 * order). A file found held once read, when a pipe of new content was read
 * with it, cannot be dropped by running again: exit 73 naming both,
 * nothing published. */
Test(content, a_pipe_is_dropped_or_the_run_refused)
{
    OK("rm -rf D && \"$RS\" bucket --quiet --nodes 4 --append -o D g1.csv.gz && snap D raw > s1 && "
       "cat day.csv | \"$RS\" bucket --append -o D - 2> err && "
       "grep -q 'standard input: already ingested by generation 1 (as g1.csv.gz: the same content once "
       "decompressed): skipped' err && snap D raw | cmp -s - s1");
    OK("cat new.csv | \"$RS\" bucket --append -o D bg.csv.gz - 2> err; test $? = 73 && "
       "grep -q 'bg.csv.gz: already ingested by generation 1 (as g1.csv.gz: the same content once decompressed); "
       "it was read with standard input, which cannot be read again to run without it: nothing published' err && "
       "snap D raw | cmp -s - s1 && test $(litter D) = 0");
    OK("rm -rf N && cat day.csv | \"$RS\" bucket --nodes 4 --append -o N - zm.csv.zst 2> err && "
       "grep -q 'standard input: the same content as zm.csv.zst, later in this run: skipped' err && "
       "grep -q '\"path\": \"zm.csv.zst\"' N/manifest.json && test $(grep -c '\"path\"' N/manifest.json) = 1 && "
       CHECK_ROWS "N day.csv");
}

/* ---- a header spelled otherwise ----------------------------------------- */

/* b0: the base, spelled as gen_bills spells its header; bom: a UTF-8 BOM
 * before it; quoted: each name quoted; crlf: CRLF line ends. Other rows
 * in each. DIR made from FIRST, then the other spellings appended: every
 * segment starts with the base's header bytes (check_rows), verify and cat
 * --all exit 0, cat's first line is the base's, rows exact. */
static void spellings(const char *cmd, const char *first)
{
    const char *rows = strcmp(cmd, "dedup") ? "" : "--first-by-key";
    OK(GEN " --rows 300 --seed 21 -o b0.csv 2>/dev/null && "
       GEN " --rows 300 --seed 22 -o b1.csv 2>/dev/null && printf '\\357\\273\\277' > bom.csv && cat b1.csv >> bom.csv && "
       GEN " --rows 300 --seed 23 -o b2.csv 2>/dev/null && "
       "{ head -1 b2.csv | sed 's/\\([^,]*\\)/\"\\1\"/g'; tail -n +2 b2.csv; } > quoted.csv && "
       "head -1 quoted.csv | grep -q '^\"bill_id\",\"user_id\",' && "
       GEN " --rows 300 --seed 24 --crlf -o crlf.csv 2>/dev/null && head -1 crlf.csv | od -c | grep -q '\\\\r' && "
       "rm -rf D && \"$RS\" %s --quiet --nodes 4 --append -o D %s && "
       "for f in b0.csv bom.csv quoted.csv crlf.csv; do [ $f = %s ] || "
       "\"$RS\" %s --quiet --append -o D $f || exit 1; done && "
       "test -d D/g00000004 && \"$RS\" verify --quiet D && \"$RS\" cat --all D > all.csv && "
       "head -1 all.csv > h2 && head -1 %s | tr -d '\\r' | cmp -s - h2 && "
       CHECK_ROWS "D %s b0.csv bom.csv quoted.csv crlf.csv",
       cmd, first, first, cmd, first, rows);
}

Test(content, a_header_spelled_otherwise_is_written_as_the_base_spells_it)
{
    static const char *const firsts[] = {"b0.csv", "bom.csv", "quoted.csv", "crlf.csv"};
    for (size_t k = 0; k < 4; k++)
        spellings("bucket", firsts[k]);
    spellings("dedup", "b0.csv");
    spellings("dedup", "quoted.csv");
}

/* A header with other fields: exit 2 (bad input data, as two inputs
 * whose headers differ) naming the input, the directory's
 * manifest and the field, DIR byte for byte as it was, nothing beside it -
 * in whichever spelling. */
Test(content, a_header_with_other_fields_is_refused)
{
    OK(GEN " --rows 100 --seed 31 -o b0.csv 2>/dev/null && "
       "{ head -1 b0.csv | sed 's/user_id/customer/'; tail -n +2 b0.csv; } > other.csv && "
       "{ printf '\\357\\273\\277'; head -1 other.csv | sed 's/\\([^,]*\\)/\"\\1\"/g'; tail -n +2 other.csv; } "
       "> other_quoted.csv && "
       "\"$RS\" bucket --quiet --nodes 4 --append -o D b0.csv && snap D raw > s1");
    static const char *const cmds[] = {"bucket", "dedup"};
    for (int c = 0; c < 2; c++)
        OK("for f in other.csv other_quoted.csv; do "
           "\"$RS\" %s --append -o D $f 2> err; rc=$?; "
           "[ $rc = 2 ] && grep -q \"$f: line 1: header differs from the header of D/manifest.json: field 2 is "
           "'customer', D/manifest.json has 'user_id'\" err || { echo \"$f: exit $rc\"; cat err; exit 1; }; "
           "snap D raw | cmp -s - s1 && test $(litter D) = 0 || exit 1; done",
           cmds[c]);
}

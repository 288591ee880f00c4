/* Odd input, read through the real command: record numbering and blank
 * lines, headers (BOM, differing fields), gzip padding, inputs that change
 * while read, FIFOs, and records longer than a batch. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/reader.h"
#include "support.h"
#include "wait.h"

TestSuite(input, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

#define OK SH_OK

/* The stdout of a command that must succeed (malloc'd). */
static char *out_of(const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, 0, "%s\nexit %d\nstderr: %s", cmd, r.rc, r.err);
    free(r.err);
    return r.out;
}

/* ---------------------------------------------------------- numbering */

/* Records count records: blank lines are lines, not records, before the
 * header and after it; blank_lines counts them all. */
Test(input, records_count_records_and_blank_lines_count_all_blank_lines)
{
    OK("printf '\\n\\nid,v\\n\\nk1,1\\n\\n\\nk2,\"x\\n' > u.csv && printf 'id,v\\n\\nk1,1\\n2,b\"c\\n\\n3,d\\n' > q.csv");
    /* k2 is data record 2 (records number the rows after the header), on line 8 */
    sh_expect_free(2, "u.csv: line 8 (record 2): unterminated quoted field", "\"$RS\" bucket --quiet -o out u.csv");
    char *q = out_of("\"$RS\" bucket --quiet --on-bad-row quarantine=q.tsv -o out q.csv && cat q.tsv && "
                     "grep -o '\"blank_lines\": [0-9]*' out/manifest.json");
    cr_assert(strstr(q, "q.csv\t4\t2\tstray quote in unquoted field\t2,b\"c\n"), "%s", q);
    cr_assert(strstr(q, "\"blank_lines\": 2"), "%s", q);
    free(q);
    char *m = out_of("printf '\\n\\nid,v\\n\\nk1,1\\n' > b.csv && \"$RS\" bucket --quiet -o out2 b.csv && "
                     "grep -o '\"blank_lines\": [0-9]*' out2/manifest.json");
    cr_assert(strstr(m, "\"blank_lines\": 3"), "blank lines before the header count: %s", m);
    free(m);
}

/* ------------------------------------------------------------ headers */

/* A UTF-8 BOM before the header is not part of the first name: the key is
 * found, a quoted first name parses, and headers differing only by it are
 * the same header. The output's header line is the first input's, byte
 * for byte (with its BOM when it has one); dedup --buckets and plan
 * --from-buckets read such outputs. */
Test(input, bom_before_the_header_is_ignored_for_matching_and_kept_in_the_output)
{
    OK("printf '\\357\\273\\277\"bill_id\",v\\n1,a\\n' > bom.csv && printf 'bill_id,v\\n2,b\\n' > plain.csv");
    char *o = out_of("\"$RS\" bucket --quiet --nodes 1 --compress none --key bill_id -o a bom.csv plain.csv && "
                     "od -An -c a/0.csv | tr -d '\\n' | tr -s ' ' && \"$RS\" bucket --quiet --nodes 1 --compress none "
                     "--key bill_id -o b plain.csv bom.csv && echo && head -1 b/0.csv");
    cr_assert(strstr(o, " 357 273 277 \" b i l l _ i d \" , v \\n 1 , a \\n 2 , b \\n"), "%s", o);
    cr_assert(strstr(o, "\nbill_id,v\n"), "the first input's header line, without a BOM: %s", o);
    free(o);
    assert_verify(path_join(test_dir, "a"));
    OK("\"$RS\" bucket --quiet --nodes 3 --key bill_id -o c bom.csv plain.csv && "
       "\"$RS\" dedup --quiet --buckets c -o d && \"$RS\" plan --quiet --from-buckets c --add 2 --emit e");
    assert_verify(path_join(test_dir, "d"));
    assert_verify(path_join(test_dir, "e"));
    OK("\"$RS\" dedup --quiet --key bill_id -o f bom.csv plain.csv");
    assert_verify(path_join(test_dir, "f"));
}

/* With --no-header a BOM at the input's start is dropped, as DuckDB drops
 * it: the first row is written without it and keyed by what follows. */
Test(input, bom_without_a_header_is_dropped)
{
    char *o = out_of("printf '\\357\\273\\277k1,1\\nk2,2\\n' > n.csv && \"$RS\" bucket --quiet --nodes 1 --no-header "
                     "--compress none -o a n.csv && \"$RS\" dedup --quiet --no-header --compress none -o b n.csv && "
                     "cat a/0.csv b/*.csv | od -An -c | tr -d '\\n' | tr -s ' '");
    cr_assert_str_eq(o, " k 1 , 1 \\n k 2 , 2 \\n k 1 , 1 \\n k 2 , 2 \\n");
    free(o);
}

/* "header differs" names the first field that differs, escaped, and says
 * when a BOM was ignored. */
Test(input, header_differs_names_the_first_differing_field)
{
    OK("printf 'id,v,x\\n1,a,b\\n' > a.csv && printf 'id,v,y\\n2,b,c\\n' > b.csv && printf 'id,v\\n' > c.csv && "
       "printf 'id,v,x,w\\tz\\n' > d.csv && printf '\\357\\273\\277id,w\\n' > e.csv && "
       "printf '\\nid,v,\\047q\\\\\\n' > f.csv");
    sh_expect_free(2, "b.csv: line 1: header differs from the header of a.csv: field 3 is 'y', a.csv has 'x'",
               "\"$RS\" bucket --quiet -o out a.csv b.csv");
    sh_expect_free(2, "c.csv: line 1: header differs from the header of a.csv: it has only 2 fields, a.csv has 'x' as "
                  "field 3", "\"$RS\" bucket --quiet -o out a.csv c.csv");
    sh_expect_free(2, "d.csv: line 1: header differs from the header of a.csv: field 4 is 'w\\tz', a.csv has only 3 "
                  "fields", "\"$RS\" bucket --quiet -o out a.csv d.csv");
    sh_expect_free(2, "e.csv: line 1: header differs from the header of a.csv: field 2 is 'w', a.csv has 'v' (its "
                  "header starts with a UTF-8 BOM, which is ignored)", "\"$RS\" bucket --quiet -o out a.csv e.csv");
    sh_expect_free(2, "a.csv: line 1: header differs from the header of e.csv: field 2 is 'v', e.csv has 'w' (e.csv's "
                  "header starts with a UTF-8 BOM, which is ignored)", "\"$RS\" bucket --quiet -o out e.csv a.csv");
    sh_expect_free(2, "f.csv: line 2: header differs from the header of a.csv: field 3 is '\\x27q\\\\', a.csv has 'x'",
               "\"$RS\" bucket --quiet -o out a.csv f.csv");
}

/* ------------------------------------------------------------- FIFOs */

/* A named FIFO is opened once, by the reader: every row arrives. (Before,
 * listing the input's units opened and closed it first, and the reader's
 * own open then waited for a writer that had gone.) */
Test(input, named_fifo_input_is_read_once_to_its_end)
{
    char *o = out_of("mkfifo f && { printf 'id,v\\n1,a\\n2,b\\n3,c\\n' > f & } && "
                     "timeout 60 \"$RS\" bucket --quiet --nodes 1 --compress none -o out f; rc=$?; wait; "
                     "echo \"rc=$rc\"; cat out/0.csv");
    cr_assert(strstr(o, "rc=0\nid,v\n1,a\n2,b\n3,c\n"), "%s", o);
    free(o);
    o = out_of("mkfifo g && { printf 'id,v\\n1,a\\n' | gzip > g & } && "
               "timeout 60 \"$RS\" bucket --quiet --nodes 1 --compress none -o out2 g; rc=$?; wait; "
               "echo \"rc=$rc\"; cat out2/0.csv");
    cr_assert(strstr(o, "rc=0\nid,v\n1,a\n"), "gzip through a FIFO: %s", o);
    free(o);
}

/* A stop signal that lands after the reader last looked at the stop flag
 * but before it blocks in read() on a quiet pipe still ends the run: the
 * reader waits on the flag's self-pipe beside the input. The run stops
 * itself after its first read (RINGSHARD_TEST_PAUSE_AT=first-read); one
 * SIGTERM, sent while it is stopped, is handled as it goes on, just before
 * its next read, while the FIFO's writer stays open and silent. Before,
 * that read blocked until the writer wrote or went away. */
Test(input, one_stop_signal_ends_a_run_waiting_on_a_quiet_pipe)
{
    sh_expect_free(130, "interrupted",
               WAIT_SH "mkfifo q && exec 3<>q && printf 'id,v\\n1,a\\n' >&3 && "
                       "{ RINGSHARD_TEST_PAUSE_AT=first-read \"$RS\" bucket --quiet --nodes 3 -o out q & } && pid=$! && "
                       "wait_stopped $pid 'the first read of the FIFO' || exit 124; "
                       "kill -TERM $pid && kill -CONT $pid && "
                       "wait_for 'the run to end on one SIGTERM' \"is_gone $pid\" || { kill -9 $pid; exit 124; }; "
                       "wait $pid; rc=$?; if test -e out; then echo published >&2; exit 42; fi; exit $rc");
}

/* ------------------------------------------------------- gzip padding */

/* Zero bytes after the last member up to the end of the file are padding
 * (gzip, zcat and pigz accept it): read, counted in the manifest, with
 * either codec, and in ringshard's own files read in units. Anything else
 * after a zero is garbage, another member included; the garbage message
 * counts the bytes to the end of the file, in the singular for one. */
Test(input, zero_padding_after_the_last_member_is_accepted_and_counted)
{
    OK("printf 'id,v\\n1,a\\n2,b\\n' | gzip > p.gz && cp p.gz pad.gz && head -c 1000 /dev/zero >> pad.gz && "
       "zcat pad.gz > /dev/null");
    /* accepted, but said, --quiet or not: a copy cut short into a preallocated file looks the same */
    OK("\"$RS\" bucket --quiet --nodes 1 -o w pad.gz p.gz 2> e && grep -q 'bucket: warning: 1 input ends in zero bytes "
       "after the last gzip member or zstd frame (1000 bytes, first pad.gz), read as padding' e && "
       "\"$RS\" bucket --quiet --nodes 1 -o w2 p.gz 2> e2 && test ! -s e2");
    for (int zlib = 0; zlib < 2; zlib++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "rm -rf out && \"$RS\" bucket --quiet %s --nodes 1 --compress none -o out pad.gz p.gz && "
                 "cat out/0.csv && grep -o '\"zero_padding_bytes\": [0-9]*' out/manifest.json",
                 zlib ? "--zlib" : "");
        char *o = out_of(cmd);
        cr_assert(strstr(o, "id,v\n1,a\n2,b\n1,a\n2,b\n\"zero_padding_bytes\": 1000\n\"zero_padding_bytes\": 0\n"),
                  "%s", o);
        free(o);
        assert_verify(path_join(test_dir, "out"));
        /* ringshard's own output, padded, read in units of every member */
        snprintf(cmd, sizeof cmd,
                 "rm -rf own o2 && \"$RS\" bucket --quiet --nodes 1 -o own pad.gz p.gz && cp own/0.csv.gz own.gz && "
                 "head -c 4096 /dev/zero >> own.gz && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet %s --nodes 1 "
                 "--compress none -o o2 own.gz && cat o2/0.csv && "
                 "grep -o '\"zero_padding_bytes\": [0-9]*' o2/manifest.json",
                 zlib ? "--zlib" : "");
        o = out_of(cmd);
        cr_assert(strstr(o, "id,v\n1,a\n2,b\n1,a\n2,b\n\"zero_padding_bytes\": 4096\n"), "%s", o);
        free(o);
        rs_input_unit *u;
        size_t n;
        uint64_t size;
        rs_error err = {0};
        cr_assert_eq(rs_input_units(path_join(test_dir, "own.gz"), 1, &u, &n, &size, &err), 0, "%s", err.msg);
        cr_assert(n == 3 && u[n - 1].counted && u[n - 1].offset + u[n - 1].size == size,
                  "split in units, the last one taking the padding: %zu units", n);
        free(u);
        /* {shell up to the command, with $f the input; the message} */
        static const char *const bad[][2] = {
            {"cp pad.gz padm.gz && cat p.gz >> padm.gz && f=padm.gz &&",
             "padm.gz: garbage after gzip member at byte offset 33 (1000 zero bytes, then byte 0x1f at byte offset "
             "1033: only zero bytes may follow the last member, up to the end of the file)"},
            {"cp pad.gz padx.gz && printf x >> padx.gz && f=padx.gz &&",
             "padx.gz: garbage after gzip member at byte offset 33 (1000 zero bytes, then byte 0x78 at byte offset "
             "1033:"},
            {"cp p.gz g1.gz && printf x >> g1.gz && f=g1.gz &&",
             "g1.gz: garbage after gzip member at byte offset 33 (1 trailing byte that does not start a gzip member)"},
            {"f=- && cat g1.gz |", "bucket: standard input: garbage after gzip member at byte offset 33 (at least 1 "
                                    "trailing byte that does not start a gzip member)"},
        };
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            snprintf(cmd, sizeof cmd, "%s \"$RS\" bucket --quiet %s -o x $f", bad[k][0], zlib ? "--zlib" : "");
            sh_expect_free(2, bad[k][1], cmd);
        }
    }
}

/* ----------------------------------------------- inputs that change */

/* Runs bucket on FILE with the reader's test pause (the process stops
 * itself after its first read of FILE), waits for the stopped state (no
 * fixed sleep: it polls the state, for up to 60 s), runs CHANGE, lets the
 * process go on and exits with its exit status (42 if it published out). */
#define CHANGED_WHILE_READ(file, change)                                                                       \
    "RINGSHARD_TEST_PAUSE_AT=first-read \"$RS\" bucket --quiet --nodes 3 -o out " file " & pid=$!\n"         \
    "n=0; until grep -q '^State:[[:space:]]*T' /proc/$pid/status 2>/dev/null; do\n"                          \
    "  n=$((n+1)); if [ $n -gt 6000 ] || ! kill -0 $pid 2>/dev/null; then echo never stopped >&2; kill $pid;" \
    " exit 9; fi; sleep 0.01; done\n" change "\nkill -CONT $pid; wait $pid; rc=$?; if test -e out; then echo published >&2; exit 42; fi; exit $rc"

/* A file cut, grown or rewritten in place while it is read fails the run
 * (exit 1, nothing published) naming the file, instead of publishing the
 * rows read with the cut last row taken as whole; gzip too (not a
 * "truncated gzip stream"). A last record without a line end in a file
 * that did not change is an ordinary record. */
Test(input, a_file_that_changes_while_read_fails_the_run)
{
    OK("python3 -c \"open('big.csv','w').write('id,v\\n' + ''.join('k%%d,%%s\\n' %% (i, 'x' * 20) for i in "
       "range(200000)))\" && cp big.csv grow.csv && cp big.csv same.csv && touch -d 2000-01-01 same.csv && "
       "gzip -1 -c big.csv > big.gz");
    sh_expect_free(1, "big.csv: the file changed while it was read (size 5688895 at open, 2000001 now)",
               CHANGED_WHILE_READ("big.csv", "truncate -s 2000001 big.csv"));
    sh_expect_free(1, "grow.csv: the file changed while it was read (size 5688895 at open, 5688899 now)",
               CHANGED_WHILE_READ("grow.csv", "echo k,1 >> grow.csv"));
    sh_expect_free(1, "same.csv: the file changed while it was read (size 5688895, but modified since it was opened)",
               CHANGED_WHILE_READ("same.csv", "printf zz | dd of=same.csv bs=1 seek=3000000 conv=notrunc 2>/dev/null"));
    sh_expect_free(1, "big.gz: the file changed while it was read (size ",
               CHANGED_WHILE_READ("big.gz", "truncate -s 100000 big.gz"));
    /* bytes appended to a gzip file are that change too, not "garbage after gzip member" (exit 2, with
     * "0 trailing bytes" counted to the size at open): a file of several read blocks (1 MiB), so that the
     * appended bytes are read */
    OK("python3 -c \"import random; r = random.Random(1); open('rnd.csv','w').write('id,v\\n' + "
       "''.join('k%%d,%%032x\\n' %% (i, r.getrandbits(128)) for i in range(100000)))\" && "
       "gzip -1 -c rnd.csv > grow.gz && cp grow.gz pad.gz && test $(wc -c < grow.gz) -gt 2097152");
    sh_expect_free(1, "grow.gz: the file changed while it was read (size ",
               CHANGED_WHILE_READ("grow.gz", "printf garbage >> grow.gz"));
    sh_expect_free(1, "pad.gz: the file changed while it was read (size ",
               CHANGED_WHILE_READ("pad.gz", "printf '\\000\\000x' >> pad.gz"));
    /* unchanged, without a final line end: the last record is whole */
    char *o = out_of("printf 'id,v\\n1,a\\n2,b' > nolf.csv && \"$RS\" bucket --quiet --nodes 1 --compress none "
                     "-o o nolf.csv && cat o/0.csv");
    cr_assert_str_eq(o, "id,v\n1,a\n2,b\n");
    free(o);
}

/* ---------------------------------------------------- long records */

/* One rule for a record over the limit, whether or not it fits a batch
 * (--memory 32M: batches of 1.5 MiB, a limit of 768 KiB; the record here is
 * 3 MB): under fail an error with file, line and record; under skip it is
 * skipped and the run goes on; under quarantine it is quarantined cut to
 * the limit, with the limit in the reason, for any -j. --max-record above
 * what --memory allows is a usage error saying the most it allows. */
Test(input, a_record_longer_than_a_batch_is_a_bad_row_like_any_other)
{
    OK("python3 -c \"open('lr.csv','w').write('id,v\\n1,a\\n2,' + 'x' * 3000000 + '\\n3,c\\n4,' + 'y' * 100 + "
       "'\\n5,e\\n')\"");
    sh_expect_free(2, "lr.csv: line 3 (record 2): record longer than the limit (field 2, byte 353621 of the record)",
               "\"$RS\" bucket --quiet --memory 32M -o out lr.csv");
    char *o = out_of("\"$RS\" bucket --quiet --memory 32M --on-bad-row skip --nodes 1 --compress none -o s lr.csv && "
                     "cat s/0.csv && grep -o '\"rejected\": [0-9]*' s/manifest.json | head -1");
    cr_assert_str_eq(o, "id,v\n1,a\n3,c\n4,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                        "yyyyyyyyyyyyyyyy\n5,e\n\"rejected\": 1\n");
    free(o);
    for (int j = 1; j <= 2; j++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "\"$RS\" bucket --quiet -j %d --memory 32M --max-record 50 --on-bad-row quarantine=q%d.tsv -o q%d "
                 "lr.csv && cut -f 1-4 q%d.tsv && cut -f 5 q%d.tsv | awk '{ print length($0) }'",
                 j, j, j, j, j);
        o = out_of(cmd);
        cr_assert_str_eq(o, "input\tline\trecord\treason\n"
                            "lr.csv\t3\t2\trecord longer than the limit (50 bytes)\n"
                            "lr.csv\t5\t4\trecord longer than the limit (50 bytes)\n"
                            "3\n50\n50\n");
        free(o);
    }
    o = out_of("\"$RS\" bucket --quiet --memory 32M --on-bad-row quarantine=q.tsv -o q lr.csv && "
               "cut -f 1-4 q.tsv && cut -f 5 q.tsv | awk '{ print length($0) }'");
    cr_assert_str_eq(o, "input\tline\trecord\treason\nlr.csv\t3\t2\trecord longer than the limit (353620 bytes)\n"
                        "3\n353620\n");
    free(o);
    sh_expect_free(64, "--max-record: 104857600 bytes is more than --memory 33554432 allows (at most 353620 bytes: half "
                   "a batch of 707241); raise --memory or lower --max-record",
               "\"$RS\" bucket --quiet --memory 32M --max-record 100M -o out lr.csv");
}

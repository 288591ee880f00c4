/* Odd input, read through the real command: record numbering and blank
 * lines, headers (BOM, differing fields), gzip padding, inputs that change
 * while read, FIFOs, and records longer than a batch (issue 15). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

TestSuite(input, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

#define OK SH_OK

/* Asserts that the command exits with `rc` and that its stderr holds `want`. */
static void fails_with(int rc, const char *want, const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, rc, "%s\nexit %d, want %d\nstderr: %s", cmd, r.rc, rc, r.err);
    cr_assert(strstr(r.err, want), "%s\nstderr: %s\nwant: %s", cmd, r.err, want);
    cmd_result_free(&r);
}

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
    fails_with(2, "u.csv: line 8 (record 2): unterminated quoted field", "\"$RS\" bucket --quiet -o out u.csv");
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

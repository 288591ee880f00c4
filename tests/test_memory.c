/* --memory bounds the whole process, whatever the input size: the peak
 * resident set of `ringshard bucket` over 300,000 generated rows (30 MB of
 * CSV, many batches) stays within the budget. Measured by Python's
 * resource.getrusage(RUSAGE_CHILDREN), i.e. by the kernel. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

Test(memory, peak_rss_within_budget, .timeout = 300)
{
    char *tmp = make_tmpdir();
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && \"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 9 --newline-share 0.01 2>/dev/null "
             "| gzip -1 > in.csv.gz && python3 -c \"\nimport resource, subprocess, sys\n"
             "for mem in (32, 64):\n"
             "    subprocess.run([sys.argv[1], 'bucket', '--quiet', '--memory', f'{mem}M', '-o', f'out{mem}', "
             "'in.csv.gz'], check=True)\n"
             "    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, max over children so far\n"
             "    print(mem, peak)\n"
             "\" \"$RS\"",
             tmp);
    char *out, *err;
    int rc = run(cmd, &out, &err);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    int mem, peak, n = 0;
    const char *p = out;
    while (sscanf(p, "%d %d", &mem, &peak) == 2) {
        cr_assert_leq(peak, mem * 1024, "--memory %dM: peak RSS %d KiB", mem, peak);
        cr_assert_gt(peak, 8 * 1024, "the measurement itself must see the process (%d KiB)", peak);
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    cr_assert_eq(n, 2, "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    system(cmd);
    free(out);
    free(err);
    free(tmp);
}

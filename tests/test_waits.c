/* The command's OpenMP threads wait asleep unless the user says otherwise
 * (src/cli/waits.c): the runtime, asked to show the settings it read
 * (OMP_DISPLAY_ENV=verbose), shows passive waits - libgomp a spin count of
 * 0, LLVM's libomp (the TSan build) a block time of 0 - while a user's
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT is what the runtime uses. A command
 * that runs a parallel region is used, as libomp reads its settings at the
 * first one. (That passive waits keep the CPU time down beside other
 * work: tools/bench/bench_shared.sh, docs/performance.md.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

TestSuite(waits, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

/* Runs a small bucket run at -j 2 with the environment settings env
 * (after unsetting the user's), returning what the runtime printed. */
static char *runtime_settings(const char *env)
{
    SH_OK("printf 'k,v\\n1,a\\n2,b\\n3,c\\n' > in.csv");
    cmd_result r = sh_in_test_dir("unset OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME; %s OMP_DISPLAY_ENV=verbose "
                                  "\"$RS\" bucket --quiet -j 2 --key k --nodes 2 --force -o out in.csv",
                                  env);
    cr_assert_eq(r.rc, 0, "exit %d\nstderr: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "OMP_WAIT_POLICY"), "the runtime showed no settings:\n%s", r.err);
    char *err = r.err;
    r.err = NULL;
    cmd_result_free(&r);
    return err;
}

static int libgomp(const char *s)
{
    return strstr(s, "GOMP_SPINCOUNT") != NULL;
}

Test(waits, passive_unless_the_environment_says)
{
    char *s = runtime_settings("");
    if (libgomp(s)) {
        cr_expect(strstr(s, "OMP_WAIT_POLICY = 'PASSIVE'"), "%s", s);
        cr_expect(strstr(s, "GOMP_SPINCOUNT = '0'"), "libgomp spins:\n%s", s);
    } else {
        cr_expect(strstr(s, "OMP_WAIT_POLICY='PASSIVE'"), "%s", s);
        cr_expect(strstr(s, "KMP_BLOCKTIME='0'"), "libomp spins:\n%s", s);
    }
    free(s);
}

Test(waits, a_users_wait_policy_is_kept)
{
    char *s = runtime_settings("OMP_WAIT_POLICY=active");
    if (libgomp(s)) {
        cr_expect(strstr(s, "OMP_WAIT_POLICY = 'ACTIVE'"), "%s", s);
        cr_expect(!strstr(s, "GOMP_SPINCOUNT = '0'"), "%s", s);
    } else {
        cr_expect(strstr(s, "OMP_WAIT_POLICY='ACTIVE'"), "%s", s);
        cr_expect(!strstr(s, "KMP_BLOCKTIME='0'"), "%s", s);
    }
    free(s);
}

Test(waits, a_users_spin_count_is_kept)
{
    char *s = runtime_settings("GOMP_SPINCOUNT=12345");
    if (libgomp(s))
        cr_expect(strstr(s, "GOMP_SPINCOUNT = '12345'"), "%s", s);
    else  /* libomp reads no GOMP_SPINCOUNT: its own default, not passive */
        cr_expect(!strstr(s, "KMP_BLOCKTIME='0'"), "%s", s);
    free(s);
}

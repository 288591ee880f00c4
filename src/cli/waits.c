/* The ringshard command's OpenMP threads wait asleep (passive waits) unless
 * the user's environment says otherwise.
 *
 * Why: an OpenMP runtime's idle threads spin by default - libgomp for
 * GOMP_SPINCOUNT rounds (300,000, milliseconds) at every barrier and in its
 * pool between parallel regions. On a machine whose cores other work is
 * using, those spins take the CPU from the thread that has the work: verify
 * of a 1000-file directory took 20 times the wall and 10 times the CPU of a
 * run with OMP_WAIT_POLICY=passive (docs/performance.md, "A shared
 * machine"). The pipeline's own waits spin at most 200 microseconds and
 * then sleep (pipeline.c); this covers the runtime's.
 *
 * How: libgomp reads its environment once, in a constructor that runs when
 * the library is loaded - before main() and before any constructor of a
 * program that links it as a shared library. The command therefore links
 * libgomp statically (CMakeLists.txt, RS_LIBGOMP_STATIC) and this
 * constructor has a priority, so it runs before libgomp's own (which has
 * none). LLVM's libomp (the TSan build) reads its environment at the first
 * OpenMP call, later still. A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT (or
 * libomp's KMP_BLOCKTIME) is left alone: OMP_WAIT_POLICY=active brings the
 * spinning back, for a machine the command has to itself.
 *
 * Only the command does this, not the library: a program that links
 * libringshard chooses its own runtime settings. Child processes (none
 * today) would inherit the setting. */
#include <stdlib.h>

__attribute__((constructor(101))) static void rs_passive_waits(void)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("KMP_BLOCKTIME"))
        return;
    setenv("OMP_WAIT_POLICY", "passive", 0);
}

/* Sizes and speeds for people (ringshard/util.h): the summaries' units.
 * Decimal units throughout (1 kB = 1000 B, 1 MB = 10^6 B), as disks and
 * network rates are quoted; the machine-readable outputs (JSON, metrics,
 * manifests) keep exact counts. */
#include <stdio.h>
#include "ringshard/util.h"

const char *rs_human_bytes(double n, char *buf, size_t cap)
{
    static const char *const unit[] = {"kB", "MB", "GB", "TB", "PB"};
    if (n < 999.5) {
        snprintf(buf, cap, "%.0f B", n < 0 ? 0 : n);
        return buf;
    }
    /* one decimal, in the largest unit that keeps the number under 1000
     * ("10312.4 MB" reads as "10.3 GB") */
    int u = 0;
    double v = n / 1e3;
    while (v >= 999.95 && u < 4)
        v /= 1e3, u++;
    snprintf(buf, cap, "%.1f %s", v, unit[u]);
    return buf;
}

const char *rs_human_rate(double per_second, const char *what, char *buf, size_t cap)
{
    static const char *const prefix[] = {"", "k ", "M ", "G "};
    int p = 0;
    double v = per_second > 0 ? per_second : 0;
    while (v >= 999.5 && p < 3)
        v /= 1e3, p++;
    /* three significant digits: "352 k", "1.25 M", never "0.00 M" */
    int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
    snprintf(buf, cap, "%.*f %s%s/s", decimals, v, prefix[p], what);
    return buf;
}

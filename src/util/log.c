#include <stdarg.h>
#include <stdio.h>
#include "ringshard/log.h"

static rs_log_level log_level = RS_LOG_WARN;

void rs_log_set_level(rs_log_level level) { log_level = level; }
rs_log_level rs_log_get_level(void) { return log_level; }

void rs_log(rs_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ringshard: %s: %s\n", names[level], line);
}

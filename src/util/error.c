#include <stdio.h>
#include <string.h>
#include "ringshard/error.h"

int rs_error_set(rs_error *err, int code, const char *fmt, ...)
{
    if (err == NULL || err->code != 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code ? code : RS_EXIT_IO;
    return -1;
}

void rs_error_clear(rs_error *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

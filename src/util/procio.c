/* util/procio.c - see ringshard/procio.h. */
#include "ringshard/procio.h"
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of "name: N" in text, or -1 when absent. */
static int field(const char *text, const char *name, uint64_t *v)
{
    size_t n = strlen(name);
    for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) != 0 || p[n] != ':')
            continue;
        char *end;
        unsigned long long x = strtoull(p + n + 1, &end, 10);
        if (end == p + n + 1)
            return -1;
        *v = (uint64_t)x;
        return 0;
    }
    return -1;
}

int rs_procio_read(rs_procio *io)
{
    memset(io, 0, sizeof *io);
    char text[1024];
    int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    io->known = field(text, "rchar", &io->rchar) == 0 && field(text, "read_bytes", &io->read_bytes) == 0;
    if (!io->known)
        io->rchar = io->read_bytes = 0;
    return io->known;
}

void rs_procio_delta(const rs_procio *a, const rs_procio *b, rs_procio *d)
{
    d->known = a->known && b->known;
    d->rchar = d->known && b->rchar > a->rchar ? b->rchar - a->rchar : 0;
    d->read_bytes = d->known && b->read_bytes > a->read_bytes ? b->read_bytes - a->read_bytes : 0;
}

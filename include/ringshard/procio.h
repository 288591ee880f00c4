/* ringshard/procio.h - what the kernel counts of this process's reads
 * (Linux /proc/self/io), so that a summary can report the bytes a run
 * really read, whatever layer read them (the key indexes, the inputs,
 * manifests, temporary files), rather than what one layer believes it
 * asked for. */
#ifndef RINGSHARD_PROCIO_H
#define RINGSHARD_PROCIO_H

#include <stdint.h>

typedef struct {
    int known;            /* 0: /proc/self/io is absent or unreadable (not Linux, no procfs) */
    uint64_t rchar;       /* bytes read(2)/pread(2) returned, page cache hits included */
    uint64_t read_bytes;  /* bytes the process caused to be fetched from storage (cold reads) */
} rs_procio;

/* The process's counters now, every thread's (/proc/self/io counts the
 * whole thread group). Fills *io; io->known is 0 when the file cannot be
 * read or lacks the two fields. One open and read of a small file: for a
 * run's start and end, not for a hot loop. Returns io->known. */
int rs_procio_read(rs_procio *io);

/* The counts between a and b (b read later): *d->known only when both
 * are known. */
void rs_procio_delta(const rs_procio *a, const rs_procio *b, rs_procio *d);

#endif

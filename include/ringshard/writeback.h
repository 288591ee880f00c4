/* ringshard/writeback.h - write-behind: the kernel starts writing output
 * files to disk while the run is still producing them.
 *
 * Why: outputs are published only once flushed (outdir.h). Left alone, the
 * kernel holds the dirty pages until the final fsyncs (1 GB is far below
 * the dirty-page thresholds of a large machine), so the whole output is
 * written while every core waits: about 0.5 s for 1 GB in 1000 files here.
 * A background thread instead starts the writeback (sync_file_range
 * SYNC_FILE_RANGE_WRITE, which does not wait for the disk) of what is
 * complete after each batch, and the final fsyncs find little left to do.
 *
 * It is a hint: nothing here reports an error. The final fsync of each file
 * does (a failed writeback makes it fail). Only for outputs that are kept:
 * writing back a temporary piece that is deleted after the run is wasted
 * disk traffic. */
#ifndef RINGSHARD_WRITEBACK_H
#define RINGSHARD_WRITEBACK_H

#include <stdint.h>

typedef struct rs_writeback rs_writeback;

/* Starts the thread for n files with descriptors fds[0..n) (copied; -1
 * entries are skipped). The descriptors must stay open until
 * rs_writeback_stop returns. NULL if the thread or memory cannot be had:
 * the run goes on without write-behind (every function accepts NULL). */
rs_writeback *rs_writeback_start(const int *fds, uint32_t n);

/* Hands over the files' current lengths: bytes below lens[d] of file d are
 * written (by write(2)) and will not change. The thread starts the
 * writeback of every whole page below them; a partial last page waits for
 * a later hand-over (or the final fsync). If the thread is busy, it takes
 * the latest lengths when it is done. Never blocks on I/O. */
void rs_writeback_post(rs_writeback *wb, const uint64_t *lens);

/* Waits for the thread to finish the hand-overs made so far, ends it and
 * frees wb. */
void rs_writeback_stop(rs_writeback *wb);

#endif

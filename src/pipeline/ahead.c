/* src/pipeline/ahead.c - reading ahead: the input after the producer's,
 * inflated by a thread of the team that would otherwise wait for it.
 *
 * Why. One pipeline has one producer (pipeline.c): inflating a stream is
 * serial. Over many small inputs - a bucket directory's files, as verify,
 * plan --from-buckets and stats read them - each input is a batch or two
 * and the rows' work after the inflate is light (counted; few of them
 * written), so the team finished each batch before the producer had
 * inflated the next one and waited for it: one core busy. Now a thread
 * done with its share of a batch while the producer is still at work opens
 * the input after the producer's and inflates its first bytes into a
 * STASH, RS_AHEAD_STEP at a time, until the producer is done (or wants the
 * stash, or it holds RS_AHEAD_MAX(cap) bytes, the size of an input's first
 * batch). The producer, opening that input, takes the reader and its
 * stash, and reads the stash before the reader (rs_pipe_read).
 *
 * The bytes are the input's, in order, whoever inflated them, and the
 * batches are cut from the bytes alone (produce.c does not depend on how
 * much a read returns: a pipe returns less than a file), so the batches,
 * the outputs and the counts are the same for any -j. An error met while
 * reading ahead (an input that cannot be opened, or does not decode) is
 * kept with the stash and given to the producer where it reads that far:
 * the same error, at the same place, after the same rows. Only an input's
 * first unit is read ahead (a later unit starts with a look at the file's
 * header, which the producer does), and never standard input.
 *
 * One stash a pipeline, taken by one thread at a time (busy, an atomic
 * flag): a helper fills it, the producer takes it (setting wanted, which
 * stops a helper within one step, then waiting for busy). Memory: the
 * stash the producer drains and the one being filled, RS_AHEAD_MAX each,
 * a quarter of a batch in all (cost.c counts them). */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include "pipeline/pipe.h"

#define RS_AHEAD_STEP ((size_t)256 << 10)

/* Whether input j can be read ahead: its first unit is read by this run,
 * and it is not standard input. */
static int ahead_eligible(const pipe_state *s, uint32_t j)
{
    const rs_pipeline_opts *o = s->o;
    if (j >= o->ninputs || j == 0 || (!o->input_names && !strcmp(o->inputs[j], "-")))
        return 0;
    size_t n = s->whole ? 1 : s->nunits[j];
    /* a cluster rank's range may end inside the last input: unit 0 is in it
     * whenever that input is (rs_pipe_list_units checks the range) */
    return n > 0;
}

rs_reader *rs_pipe_open_reader(const pipe_state *s, uint32_t i, uint32_t unit, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const rs_input_unit *u = &s->units[i][unit];
    int dirfd = o->input_names ? o->input_dirfd : AT_FDCWD;
    const char *name = o->input_names ? o->input_names[i] : o->inputs[i];
    rs_reader *rd = u->counted ? rs_reader_openat_range(dirfd, name, o->inputs[i], o->codec, u->offset, u->size, err)
                               : rs_reader_openat(dirfd, name, o->inputs[i], o->codec, err);
    if (!rd)
        return NULL;
    if (o->input_checksum)
        rs_reader_checksum_on(rd);  /* a range (u->counted) gives none: see rs_reader_checksum */
    /* The units cover the file as it was listed; other inputs are read to
     * their end, so bytes appended since must not be ignored silently. */
    if (u->counted && unit + 1 == s->nunits[i])
        rs_reader_expect_file_end(rd);
    return rd;
}

static int try_take(read_ahead *a)
{
    return __atomic_exchange_n(&a->busy, 1, __ATOMIC_ACQUIRE) == 0;
}

static void give_back(read_ahead *a)
{
    __atomic_store_n(&a->busy, 0, __ATOMIC_RELEASE);
}

/* Fills slot k's stash until it is done or the helper is to stop. */
static void fill(pipe_state *s, ahead_slot *k, const int *left, int others)
{
    read_ahead *a = &s->ahead;
    size_t max = RS_AHEAD_MAX(s->cap);
    if (!k->opened) {
        k->opened = 1;
        if (!(k->rd = rs_pipe_open_reader(s, k->input, 0, &k->err)))
            k->failed = k->done = 1;
    }
    if (!k->done && !k->stash.data && rs_buf_reserve(&k->stash, max) != 0)
        k->done = 1;   /* no stash: the producer reads it all itself */
    while (!k->done && __atomic_load_n(left, __ATOMIC_ACQUIRE) < others &&
           !__atomic_load_n(&a->wanted, __ATOMIC_ACQUIRE)) {
        size_t room = max - k->stash.len;
        ssize_t n = room ? rs_reader_read(k->rd, k->stash.data + k->stash.len,
                                          room < RS_AHEAD_STEP ? room : RS_AHEAD_STEP, &k->err)
                         : 0;
        if (n < 0)
            k->failed = 1;
        if (n <= 0)
            k->done = 1;   /* the bound, the input's end or an error: the producer goes on from here */
        else
            k->stash.len += (size_t)n;
    }
}

void rs_pipe_ahead(pipe_state *s, const int *left, int others)
{
    read_ahead *a = &s->ahead;
    if (!try_take(a))
        return;   /* another thread reads ahead, or the producer takes a stash */
    /* the inputs in their order: the next one first */
    for (uint32_t j = a->base; j < a->base + RS_AHEAD_SLOTS; j++) {
        if (__atomic_load_n(left, __ATOMIC_ACQUIRE) >= others || __atomic_load_n(&a->wanted, __ATOMIC_ACQUIRE))
            break;
        for (int k = 0; k < RS_AHEAD_SLOTS; k++)
            if (a->slot[k].input == j && !a->slot[k].done)
                fill(s, &a->slot[k], left, others);
    }
    give_back(a);
}

static void slot_reset(ahead_slot *k)
{
    if (k->rd)
        rs_reader_close(k->rd);
    k->rd = NULL;
    k->opened = k->done = k->failed = 0;
    k->stash.len = 0;
    rs_error_clear(&k->err);
    k->input = RS_AHEAD_NONE;
}

int rs_pipe_take_ahead(pipe_state *s, uint32_t i, rs_error *err)
{
    read_ahead *a = &s->ahead;
    __atomic_store_n(&a->wanted, 1, __ATOMIC_RELEASE);
    /* a helper stops within one step; on a loaded machine it may be off
     * its core meanwhile: yield to it rather than spin */
    for (unsigned n = 0; !try_take(a); n++)
        if (n < 1024)
            _mm_pause();
        else
            sched_yield();
    int took = 0, rc = 0;
    for (int k = 0; k < RS_AHEAD_SLOTS; k++) {
        ahead_slot *h = &a->slot[k];
        if (h->input == i && h->opened) {
            took = 1;
            s->rd = h->rd;
            rs_buf t = s->stash;
            s->stash = h->stash;
            h->stash = t;
            s->stash_pos = 0;
            if (h->failed && !h->rd)   /* the open failed: as it would now */
                rc = rs_error_set(err, h->err.code, "%s", h->err.msg);
            s->stash_failed = h->failed && h->rd;
            s->stash_err = h->err;
            h->rd = NULL;
        }
        if (h->input != RS_AHEAD_NONE && (h->input <= i || h->input > i + RS_AHEAD_SLOTS))
            slot_reset(h);   /* taken, or an input the producer did not go on to */
    }
    /* the next inputs, each in a slot of its own */
    a->base = i + 1;
    for (uint32_t j = i + 1; j <= i + RS_AHEAD_SLOTS && ahead_eligible(s, j); j++) {
        int have = 0, free_k = -1;
        for (int k = 0; k < RS_AHEAD_SLOTS; k++) {
            have |= a->slot[k].input == j;
            if (a->slot[k].input == RS_AHEAD_NONE && free_k < 0)
                free_k = k;
        }
        if (!have && free_k >= 0)
            a->slot[free_k].input = j;
    }
    __atomic_store_n(&a->wanted, 0, __ATOMIC_RELEASE);
    give_back(a);
    return took ? (rc ? -1 : 1) : 0;
}

ssize_t rs_pipe_read(pipe_state *s, rs_reader *rd, void *buf, size_t cap, rs_error *err)
{
    if (rd == s->rd && s->stash_pos < s->stash.len) {
        size_t n = s->stash.len - s->stash_pos;
        n = n < cap ? n : cap;
        memcpy(buf, s->stash.data + s->stash_pos, n);
        s->stash_pos += n;
        return (ssize_t)n;
    }
    if (rd == s->rd && s->stash_failed)
        return rs_error_set(err, s->stash_err.code, "%s", s->stash_err.msg);
    return rs_reader_read(rd, buf, cap, err);
}

void rs_pipe_ahead_init(pipe_state *s)
{
    memset(&s->ahead, 0, sizeof s->ahead);
    for (int k = 0; k < RS_AHEAD_SLOTS; k++)
        s->ahead.slot[k].input = RS_AHEAD_NONE;
}

void rs_pipe_ahead_free(pipe_state *s)
{
    for (int k = 0; k < RS_AHEAD_SLOTS; k++) {
        slot_reset(&s->ahead.slot[k]);
        rs_buf_free(&s->ahead.slot[k].stash);
    }
    rs_buf_free(&s->stash);
}

/* src/csv/rows_body.h - the body of rs_csv_rows and its block loader,
 * included by rows.c once per instruction set: ROWS_NAME, LOAD_NAME (the
 * window's classifier), MASKS_NAME (a block's masks) and NEXT_NAME (the
 * step to the next block) are the functions to define,
 * CLASSIFY4(s, delim, &q, &d, &cr, &lf) the block classifier (see
 * classify4_* in rows.c), PREFIX_XOR the quote parity (prefix_xor or
 * prefix_xor_clmul), ROW_SPAN_FAST 1 to read records within RS_ROW_SPAN
 * blocks off the masks at once. The including file provides slow() and
 * row_fill() (a record's row). Not a public header. */

/* The masks of block k from its classes q, dl, cr, lf, carrying quote
 * parity and "an opening quote may follow" in *in_end and *open_ok; left
 * is what the range holds from the block on. Whether a closing quote in
 * the last byte is followed as it must be is settled by the next block
 * (*pend carries it there) or, after the last block classified, by the
 * caller: a byte read per block was a sixth of the classifier. */
static inline __attribute__((always_inline)) void MASKS_NAME(rs_csv_cursor *c, uint32_t k, size_t left, uint64_t q,
                                                              uint64_t dl, uint64_t cr, uint64_t lf, uint64_t *in_end,
                                                              uint64_t *open_ok, uint64_t *pend)
{
    /* in: bytes from an opening quote up to (not including) its closing
     * one; past a tail block's end it repeats the parity at the end */
    uint64_t in = PREFIX_XOR(q) ^ *in_end;
    uint64_t ends = cr | lf;
    uint64_t dout = dl & ~in, lout = ends & ~in;
    uint64_t open = q & in, close = q & ~in;
    /* A well-formed record's quotes: an opening one follows a field's
     * start (a delimiter, a line end, the range's start) or a closing one
     * (""), a closing one is followed by an opening one, a delimiter, a
     * line end or the end. Anything else is a "bad" quote. */
    uint64_t before = dout | lout | close;
    uint64_t prev_ok = before << 1 | *open_ok;
    uint64_t follow = open | dout | lout;
    uint64_t next_ok = follow >> 1 | (uint64_t)1 << (left > 64 ? 63 : left - 1);
    c->bad[k] = (open & ~prev_ok) | (close & ~next_ok);
    c->bad[k ? k - 1 : 0] |= (*pend & ~follow) << 63; /* *pend is 0 for a first block */
    c->dout[k] = dout;
    c->lout[k] = lout;
    c->inl[k] = ends & in;
    *pend = (close >> 63) & (left > 64);
    *in_end = (uint64_t)((int64_t)in >> 63);
    *open_ok = before >> 63;
}

/* Makes the current block the first of the masks, those classified
 * after it kept, and classifies blocks after them up to RS_CSV_CHUNK,
 * carrying quote parity and "an opening quote may follow" from the last
 * block classified (c->in_end, c->open_ok). A tight loop of its own, over
 * whole blocks (the tail's copy is a call, after which the vector
 * constants would be rebuilt): classifying a block at a time inside the
 * record loop left its constants and carries spilled. */
static inline __attribute__((always_inline)) void LOAD_NAME(rs_csv_cursor *c, const unsigned char *u,
                                                             size_t end, unsigned char delim)
{
    uint32_t k = c->nblk - c->i;
    for (uint32_t j = 0; j < k; j++) {
        c->dout[j] = c->dout[c->i + j];
        c->lout[j] = c->lout[c->i + j];
        c->bad[j] = c->bad[c->i + j];
        c->inl[j] = c->inl[c->i + j];
    }
    size_t at = c->blk + ((size_t)k << 6);
    uint64_t in_end = c->in_end, open_ok = c->open_ok, pend = 0;
    uint64_t q, dl, cr, lf;
    for (; k < RS_CSV_CHUNK && end - at >= 64; k++, at += 64) {
        /* One line prefetched per line classified, RS_SCAN_AHEAD bytes
         * ahead: a range handed over from another core (a batch inflated
         * there) is out of this one's caches, and paced so the prefetches
         * never queue up behind each other as a burst of them did. */
        if (end - at > RS_SCAN_AHEAD)
            __builtin_prefetch(u + at + RS_SCAN_AHEAD);
        CLASSIFY4(u + at, delim, &q, &dl, &cr, &lf);
        MASKS_NAME(c, k, end - at, q, dl, cr, lf, &in_end, &open_ok, &pend);
    }
    if (k < RS_CSV_CHUNK && at < end) {
        size_t left = end - at;
        unsigned char tmp[64];
        memset(tmp, 0, sizeof tmp);
        memcpy(tmp, u + at, left);
        CLASSIFY4(tmp, delim, &q, &dl, &cr, &lf);
        uint64_t valid = ((uint64_t)1 << left) - 1;
        MASKS_NAME(c, k++, left, q & valid, dl & valid, cr & valid, lf & valid, &in_end, &open_ok, &pend);
    }
    if (pend) { /* a closing quote ends the last block: the byte after it */
        unsigned char nb = u[at];
        c->bad[k - 1] |= (uint64_t)!(nb == '"' || nb == delim || nb == '\r' || nb == '\n') << 63;
    }
    c->in_end = in_end;
    c->open_ok = open_ok;
    c->i = 0;
    c->nblk = k;
    c->loaded = 1;
}

/* Moves the current block to the next one, classifying more when the
 * chunk is used up. */
static inline __attribute__((always_inline)) void NEXT_NAME(rs_csv_cursor *c, const unsigned char *u,
                                                             size_t end, unsigned char delim)
{
    c->blk += 64;
    if (++c->i == c->nblk)
        LOAD_NAME(c, u, end, delim);
}

/* Counts the delimiters of mask dl0 (of the block at base) as fields,
 * noting where the key column starts and ends (ROWS_NAME's variables). */
#define TAKE_FIELDS(dl0, base)                                          \
    do {                                                                \
        uint64_t dl_ = (dl0);                                           \
        while (field < klim && dl_) {                                   \
            size_t at_ = (base) + (size_t)__builtin_ctzll(dl_);         \
            dl_ &= dl_ - 1;                                             \
            if (field == kcol)                                          \
                ks = fstart, ke = at_;                                  \
            field++;                                                    \
            fstart = at_ + 1;                                           \
        }                                                               \
        field += (uint32_t)__builtin_popcountll(dl_);                   \
    } while (0)

/* rs_csv_rows for one instruction set; kcol is the key column (key has
 * one column) and klim kcol + 1, or 0 without a key. */
static int ROWS_NAME(const rs_csv_dialect *d, const rs_csv_keyspec *key, uint32_t klim, rs_csv_cursor *c,
                     rs_csv_row *rows, size_t max, size_t *np, rs_buf *scratch, rs_csv_fault *fault)
{
    const unsigned char delim = (unsigned char)d->delim;
    const unsigned char *u = (const unsigned char *)c->p;
    const size_t end = c->end, maxrec = d->max_record ? d->max_record : SIZE_MAX;
    const uint32_t kcol = klim ? klim - 1 : 0;
    /* The block state in a local copy, kept in registers: through the
     * pointer, every store to a row (and every byte read through u, which
     * may alias anything) would reload it. Written back at the end. */
    rs_csv_cursor cc = *c;
    rs_csv_cursor *const cur = c;
    c = &cc;
    size_t n = 0;
    while (n < max && c->pos < end) {
        size_t s = c->pos, t, ks = s, ke = s;
        if (!c->loaded) {
            c->blk = s;
            c->i = c->nblk = 0;
            c->in_end = 0;
            c->open_ok = 1;
            LOAD_NAME(c, u, end, delim);
        }
        size_t skip = (s - c->blk) >> 6; /* blocks to the record's: a few at most after the fast path */
        if (c->i + skip < c->nblk) {
            c->i += (uint32_t)skip;
            c->blk += skip << 6;
        } else {
            while (s - c->blk >= 64)
                NEXT_NAME(c, u, end, delim);
        }
        uint64_t m = ~(uint64_t)0 << (s - c->blk), inl = 0;
        uint32_t field = 0;
        size_t fstart = s;
        /* A record that ends within RS_ROW_SPAN blocks of its first (most
         * do: a 128-byte record at any offset), read off their masks at
         * once, without a branch on where it ends or where its key is:
         * with records of varying length, the mispredictions of the loop
         * below (one or more a record) were a third of the scanner's time.
         * A key column after the first takes the loop's walk over the
         * delimiters. */
        if (ROW_SPAN_FAST && c->i + RS_ROW_SPAN > c->nblk && c->blk + ((size_t)(c->nblk - c->i) << 6) < end)
            LOAD_NAME(c, u, end, delim); /* slide the masks: the record's blocks in one window */
        if (ROW_SPAN_FAST && c->i + RS_ROW_SPAN <= c->nblk) {
            const uint32_t i = c->i;
            uint64_t span[RS_ROW_SPAN], dk[RS_ROW_SPAN], on = ~(uint64_t)0, bad = 0;
            size_t len = 0;
            for (int k = 0; k < RS_ROW_SPAN; k++) { /* on: all ones until the line end */
                const uint64_t lo = c->lout[i + k] & (k ? ~(uint64_t)0 : m);
                span[k] = (k ? on : m) & ((lo & (0 - lo)) - 1);
                on &= (uint64_t)0 - (lo == 0);
                bad |= c->bad[i + k] & span[k];
                inl |= c->inl[i + k] & span[k];
                dk[k] = c->dout[i + k] & span[k];
                len += (size_t)__builtin_popcountll(span[k]);
            }
            if (!on && !bad) {
                t = s + len;
                if (klim > 1) {
                    for (int k = 0; k < RS_ROW_SPAN; k++)
                        TAKE_FIELDS(dk[k], c->blk + ((size_t)k << 6));
                } else {
                    uint64_t nod = ~(uint64_t)0; /* all ones until the first delimiter */
                    size_t kl = 0;
                    for (int k = 0; k < RS_ROW_SPAN; k++) {
                        field += (uint32_t)__builtin_popcountll(dk[k]);
                        kl += (size_t)__builtin_popcountll(span[k] & ((dk[k] & (0 - dk[k])) - 1) & nod);
                        nod &= (uint64_t)0 - (dk[k] == 0);
                    }
                    if (klim) /* the key ends at the first delimiter, or the record's end */
                        ke = s + kl;
                }
                goto record;
            }
            inl = 0;
        }
        for (;;) { /* block by block to the record's line end */
            uint64_t lo = c->lout[c->i] & m;
            uint64_t span = lo ? m & ((lo & (0 - lo)) - 1) : m;
            if (c->bad[c->i] & span)
                goto slow;
            inl |= c->inl[c->i] & span;
            TAKE_FIELDS(c->dout[c->i] & span, c->blk);
            if (lo) {
                t = c->blk + (size_t)__builtin_ctzll(lo);
                break;
            }
            if (end - c->blk <= 64) { /* the range ends the record */
                if (c->in_end)
                    goto slow; /* an open quote */
                t = end;
                break;
            }
            NEXT_NAME(c, u, end, delim);
            m = ~(uint64_t)0;
        }
    record:
        if (row_fill(&rows[n], c->p, s, t, end, maxrec, field, klim, fstart, ks, ke, inl) != 0)
            goto slow;
        c->pos = rows[n++].next;
        continue;
    slow:
        c->loaded = 0;
        if (slow(d, key, c, &rows[n], scratch, fault) != RS_CSV_OK) {
            *cur = cc;
            *np = n;
            return RS_CSV_BAD;
        }
        n++;
        if (scratch && rows[n - 1].key == scratch->data)
            break; /* keep the scratch key valid: return with it */
    }
    *cur = cc;
    *np = n;
    return RS_CSV_OK;
}

#undef ROWS_NAME
#undef LOAD_NAME
#undef NEXT_NAME
#undef TAKE_FIELDS
#undef MASKS_NAME
#undef PREFIX_XOR
#undef ROW_SPAN_FAST
#undef CLASSIFY4

/* src/csv/rows_body.h - the body of rs_csv_rows and its block loader,
 * included by rows.c once per instruction set: ROWS_NAME and LOAD_NAME are
 * the functions to define, CLASSIFY4(s, delim, &q, &d, &cr, &lf) the block
 * classifier (see classify4_* in rows.c). The including file provides
 * prefix_xor(), slow() and inner_lines(). Not a public header. */

/* Classifies the block at c->blk, carrying quote parity and "an opening
 * quote may follow" from the block before (c->in_end, c->open_ok). */
static inline __attribute__((always_inline)) void LOAD_NAME(rs_csv_cursor *c, const unsigned char *u,
                                                             size_t end, unsigned char delim)
{
    size_t at = c->blk, left = end - at; /* > 0 */
    uint64_t q, dl, cr, lf;
    /* One line prefetched per line classified, RS_SCAN_AHEAD bytes ahead:
     * a range handed over from another core (a batch inflated there) is
     * out of this one's caches, and paced so the prefetches never queue
     * up behind each other as a burst of them did. */
    if (left > RS_SCAN_AHEAD)
        __builtin_prefetch(u + at + RS_SCAN_AHEAD);
    if (left >= 64) {
        CLASSIFY4(u + at, delim, &q, &dl, &cr, &lf);
    } else {
        unsigned char tmp[64];
        memset(tmp, 0, sizeof tmp);
        memcpy(tmp, u + at, left);
        CLASSIFY4(tmp, delim, &q, &dl, &cr, &lf);
        uint64_t valid = ((uint64_t)1 << left) - 1;
        q &= valid, dl &= valid, cr &= valid, lf &= valid;
    }
    /* in: bytes from an opening quote up to (not including) its closing
     * one; past a tail block's end it repeats the parity at the end */
    uint64_t in = prefix_xor(q) ^ c->in_end;
    uint64_t ends = cr | lf;
    uint64_t dout = dl & ~in, lout = ends & ~in;
    uint64_t open = q & in, close = q & ~in;
    /* A well-formed record's quotes: an opening one follows a field's
     * start (a delimiter, a line end, the range's start) or a closing one
     * (""), a closing one is followed by an opening one, a delimiter, a
     * line end or the end. Anything else is a "bad" quote. */
    uint64_t before = dout | lout | close;
    uint64_t prev_ok = before << 1 | c->open_ok;
    uint64_t next_ok = (open | dout | lout) >> 1;
    if (left > 64) {
        unsigned char nb = u[at + 64];
        next_ok |= (uint64_t)(nb == '"' || nb == delim || nb == '\r' || nb == '\n') << 63;
    } else {
        next_ok |= (uint64_t)1 << (left - 1);
    }
    c->bad = (open & ~prev_ok) | (close & ~next_ok);
    c->quotes = q;
    c->dout = dout;
    c->lout = lout;
    c->inl = ends & in;
    c->in_end = (uint64_t)((int64_t)in >> 63);
    c->open_ok = before >> 63;
    c->loaded = 1;
}

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
            c->in_end = 0;
            c->open_ok = 1;
            LOAD_NAME(c, u, end, delim);
        }
        while (s - c->blk >= 64) {
            c->blk += 64;
            LOAD_NAME(c, u, end, delim);
        }
        uint64_t m = ~(uint64_t)0 << (s - c->blk), inl = 0;
        uint32_t field = 0;
        size_t fstart = s;
        for (;;) { /* block by block to the record's line end */
            uint64_t lo = c->lout & m;
            uint64_t span = lo ? m & ((lo & (0 - lo)) - 1) : m;
            if (c->bad & span)
                goto slow;
            inl |= c->inl & span;
            uint64_t dl = c->dout & span;
            while (field < klim && dl) {
                size_t i = c->blk + (size_t)__builtin_ctzll(dl);
                dl &= dl - 1;
                if (field == kcol)
                    ks = fstart, ke = i;
                field++;
                fstart = i + 1;
            }
            field += (uint32_t)__builtin_popcountll(dl);
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
            c->blk += 64;
            LOAD_NAME(c, u, end, delim);
            m = ~(uint64_t)0;
        }
        if (t - s > maxrec)
            goto slow;
        rs_csv_row *r = &rows[n];
        r->off = s;
        r->next = t == end ? end : u[t] == '\n' ? t + 1 : t + 1 < end && u[t + 1] == '\n' ? t + 2 : t + 1;
        r->key = c->p + s;
        r->keylen = 0;
        if (t == s && t < end) { /* an empty line */
            r->len = 0;
            r->nfields = 0;
            r->lines = 1;
        } else {
            if (field + 1 < klim)
                goto slow; /* a missing key column: rs_csv_next says so */
            if (klim && field == kcol)
                ks = fstart, ke = t;
            if (klim && ke > ks && u[ks] == '"') { /* quoted: without its quotes */
                ks++, ke--;
                if (memchr(u + ks, '"', ke - ks))
                    goto slow; /* "" to halve: rs_csv_next builds it in scratch */
            }
            r->len = t - s;
            r->nfields = field + 1;
            r->lines = (t < end) + (inl ? inner_lines(u + s, t - s) : 0);
            r->key = c->p + ks;
            r->keylen = ke - ks;
        }
        n++;
        c->pos = r->next;
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
#undef CLASSIFY4

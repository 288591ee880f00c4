/* src/csv/scan_body.h - the body of rs_csv_next, included by scan.c once per
 * instruction set: SCAN_NAME is the function to define, CLASSIFY(s, delim,
 * &dm, &om) the block classifier (see classify_* in scan.c) it uses. The
 * including file provides fail(), keep(), count_lines(), scan_start() (the
 * checks before the first byte), scan_end() (a record's end), BLK and the
 * ST_* states. Not a public header; not for other files. */

static int SCAN_NAME(const rs_csv_dialect *d, const rs_csv_keyspec *key, const char *p,
                     size_t avail, int at_eof, rs_csv_record *rec, const char **keyp,
                     size_t *keylen, rs_buf *scratch, rs_csv_fault *fault)
{
    rs_csv_fault spare;
    if (fault == NULL)
        fault = &spare;
    const unsigned char delim = (unsigned char)d->delim;
    /* Fields with index < klim are key candidates; beyond it only counted. */
    uint32_t klim = 0;
    key_spans ks;
    ks.found = 0;
    int go = scan_start(d, key, avail, rec, &klim, fault);
    if (go != RS_CSV_OK)
        return go;

    const unsigned char *u = (const unsigned char *)p;
    const size_t maxrec = d->max_record ? d->max_record : SIZE_MAX;
    const size_t lim = avail < maxrec ? avail : maxrec; /* bytes allowed in the record */
    size_t fstart = 0, base = 0, t = 0;
    uint32_t field = 0, lines = 0;
    int cq = 0, state, term;

    if (u[0] == '\n' || u[0] == '\r') /* an empty line: t = 0 */
        goto terminated;

    for (;;) {
        if (base >= lim) {
            state = ST_UNQ;
            goto out_of_bytes;
        }
        uint64_t dm, om;
        size_t n = lim - base;
        if (avail - base >= BLK) {
            CLASSIFY(u + base, delim, &dm, &om);
        } else {
            unsigned char tmp[BLK];
            memset(tmp, 0, sizeof tmp);
            memcpy(tmp, u + base, avail - base);
            CLASSIFY(tmp, delim, &dm, &om);
        }
        if (n < BLK) {
            uint64_t valid = ((uint64_t)1 << n) - 1;
            dm &= valid;
            om &= valid;
        }
        /* Delimiters before the first quote/CR/LF end unquoted fields. */
        uint64_t dl = dm & (om ? (om & (0 - om)) - 1 : ~(uint64_t)0);
        if (dl) {
            while (field < klim && dl) {
                size_t i = base + (size_t)__builtin_ctzll(dl);
                dl &= dl - 1;
                keep(key, &ks, field, fstart, i, 0);
                field++;
                fstart = i + 1;
            }
            if (dl) {
                field += (uint32_t)__builtin_popcountll(dl);
                fstart = base + BLK - (size_t)__builtin_clzll(dl); /* past the last */
            }
        }
        if (om == 0) {
            base += BLK;
            continue;
        }
        size_t i = base + (size_t)__builtin_ctzll(om);
        if (u[i] != '"') { /* CR or LF outside quotes */
            t = i;
            goto terminated;
        }
        if (i != fstart)
            return fail(fault, E_STRAY, i, field + 1);
        /* A quoted field: the data has few, so memchr from quote to quote. */
        size_t pos = i + 1;
        cq = 1;
        for (;;) {
            const unsigned char *q = memchr(u + pos, '"', lim - pos);
            if (q == NULL) {
                state = ST_QUO;
                goto out_of_bytes;
            }
            size_t qi = (size_t)(q - u);
            lines += count_lines(p, pos, qi);
            if (qi + 1 >= lim) {
                state = ST_AFTERQ;
                goto out_of_bytes;
            }
            unsigned char c = u[qi + 1];
            if (c == '"') {
                cq = 2;
                pos = qi + 2;
                continue;
            }
            if (c == delim) {
                if (field < klim)
                    keep(key, &ks, field, fstart, qi + 1, cq);
                field++;
                fstart = base = qi + 2;
                cq = 0;
                break;
            }
            if (c == '\r' || c == '\n') {
                t = qi + 1;
                goto terminated;
            }
            return fail(fault, E_AFTER, qi + 1, field + 1);
        }
    }

out_of_bytes:
    term = 0;
    goto end;
terminated: /* u[t] is CR or LF outside quotes */
    term = 1;
    state = ST_UNQ;
end: /* one call, inlined once */
    return scan_end(term, state, t, lim, maxrec, p, avail, at_eof, key, &ks, klim, field, fstart, cq, lines, rec,
                    keyp, keylen, scratch, fault);
}

#undef SCAN_NAME
#undef CLASSIFY

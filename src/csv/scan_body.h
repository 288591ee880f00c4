/* src/csv/scan_body.h - the body of rs_csv_next, included by scan.c once per
 * instruction set: SCAN_NAME is the function to define, CLASSIFY(s, delim,
 * &dm, &om) the block classifier (see classify_* in scan.c) it uses. The
 * including file provides fail(), keep(), make_key(), count_lines(), BLK and
 * the ST_* states. Not a public header; not for other files. */

static int SCAN_NAME(const rs_csv_dialect *d, const rs_csv_keyspec *key, const char *p,
                     size_t avail, int at_eof, rs_csv_record *rec, const char **keyp,
                     size_t *keylen, rs_buf *scratch, rs_csv_fault *fault)
{
    rs_csv_fault spare;
    if (fault == NULL)
        fault = &spare;
    const unsigned char delim = (unsigned char)d->delim;
    if (delim == '"' || delim == '\r' || delim == '\n')
        return fail(fault, E_DELIM, 0, 0);

    /* Fields with index < klim are key candidates; beyond it only counted. */
    uint32_t klim = 0;
    key_spans ks;
    ks.found = 0;
    if (key != NULL) {
        if (key->ncols == 0 || key->ncols > RS_CSV_MAX_KEY_COLS)
            return fail(fault, E_KEYSPEC, 0, 0);
        for (uint32_t i = 0; i < key->ncols; i++)
            if (key->cols[i] >= klim)
                klim = key->cols[i] == UINT32_MAX ? UINT32_MAX : key->cols[i] + 1;
    }

    rec->len = rec->consumed = 0;
    rec->nfields = rec->lines = 0;
    if (avail == 0)
        return RS_CSV_MORE;

    const unsigned char *u = (const unsigned char *)p;
    const size_t maxrec = d->max_record ? d->max_record : SIZE_MAX;
    const size_t lim = avail < maxrec ? avail : maxrec; /* bytes allowed in the record */
    size_t fstart = 0, base = 0, t;
    uint32_t field = 0, lines = 0;
    int cq = 0, state;

    if (u[0] == '\n' || u[0] == '\r') { /* an empty line */
        t = 0;
        goto terminated;
    }

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
    if (lim < avail) { /* byte maxrec exists: only a terminator may stand there */
        unsigned char c = u[lim];
        if (state != ST_QUO && (c == '\r' || c == '\n')) {
            t = lim;
            goto terminated;
        }
        return fail(fault, E_LONG, maxrec, field + 1);
    }
    if (!at_eof)
        return RS_CSV_MORE;
    if (state == ST_QUO)
        return fail(fault, E_UNTERM, fstart, field + 1);
    rec->consumed = avail; /* the last record, without a terminator */
    t = avail;
    goto complete;

terminated: /* u[t] is CR or LF outside quotes */
    if (u[t] == '\n') {
        rec->consumed = t + 1;
    } else if (t + 1 < avail) {
        rec->consumed = t + 1 + (u[t + 1] == '\n');
    } else if (at_eof) {
        rec->consumed = t + 1;
    } else {
        return RS_CSV_MORE;
    }
    lines++;
    if (t == 0) { /* empty line */
        rec->lines = lines;
        if (key != NULL) {
            *keyp = p;
            *keylen = 0;
        }
        return RS_CSV_OK;
    }

complete:
    if (field < klim)
        keep(key, &ks, field, fstart, t, cq);
    rec->len = t;
    rec->nfields = field + 1;
    rec->lines = lines;
    if (key == NULL)
        return RS_CSV_OK;
    if (ks.found != (1u << key->ncols) - 1) {
        for (uint32_t i = 0; i < key->ncols; i++)
            if (!(ks.found & (1u << i)))
                return fail(fault, E_MISSING, t, key->cols[i] + 1);
    }
    return make_key(key, &ks, p, keyp, keylen, scratch, fault);
}

#undef SCAN_NAME
#undef CLASSIFY

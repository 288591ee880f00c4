/* UTF-8 -> UTF-16 exactly as Java's String(byte[], UTF_8) decodes (JDK 8's
 * UTF_8.Decoder array path, moved into java.lang.String in JDK 9+; both give
 * the same result). Its rule is the Unicode "maximal subpart" practice with
 * one deliberate-looking exception: Java checks for a UTF-16 surrogate only
 * after a whole 3-byte sequence decodes, so ED A0..BF is a valid prefix to
 * it and a complete encoded surrogate (ED A0 80) is ONE U+FFFD, not three;
 * a truncated one (ED A0 at the end, or ED A0 'A') is likewise one U+FFFD. */
#include "ringshard/hash.h"

#define REPL 0xFFFD

static inline int is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

/* Second byte out of range for lead b1 (overlong E0 80-9F; the surrogate
 * range ED A0-BF is NOT rejected here, matching Java). */
static inline int bad3_2(uint8_t b1, uint8_t b2)
{
    return (b1 == 0xE0 && b2 < 0xA0) || !is_cont(b2);
}

/* Second byte out of range for lead b1 in F0..F4 (overlong, > U+10FFFF). */
static inline int bad4_2(uint8_t b1, uint8_t b2)
{
    return (b1 == 0xF0 && b2 < 0x90) || (b1 == 0xF4 && b2 > 0x8F) || !is_cont(b2);
}

int rs_utf8_next_utf16(const uint8_t *s, size_t len, size_t *pos, uint16_t out[2])
{
    size_t p = *pos;
    if (p >= len)
        return 0;   /* defensive: callers loop while *pos < len */
    uint8_t b1 = s[p];
    size_t rem = len - p - 1;   /* bytes after the lead */

    if (b1 < 0x80) {
        out[0] = b1;
        *pos = p + 1;
        return 1;
    }
    if (b1 >= 0xC2 && b1 <= 0xDF) {
        if (rem >= 1 && is_cont(s[p + 1])) {
            out[0] = (uint16_t)((b1 & 0x1F) << 6 | (s[p + 1] & 0x3F));
            *pos = p + 2;
            return 1;
        }
        *pos = p + 1;
        out[0] = REPL;
        return 1;
    }
    if (b1 >= 0xE0 && b1 <= 0xEF) {
        out[0] = REPL;
        if (rem >= 2) {
            uint8_t b2 = s[p + 1], b3 = s[p + 2];
            if (bad3_2(b1, b2)) {
                *pos = p + 1;
            } else if (!is_cont(b3)) {
                *pos = p + 2;
            } else {
                uint16_t c = (uint16_t)((b1 & 0x0F) << 12 | (b2 & 0x3F) << 6 | (b3 & 0x3F));
                if (c < 0xD800 || c > 0xDFFF)
                    out[0] = c;
                *pos = p + 3;
            }
        } else if (rem == 1 && !bad3_2(b1, s[p + 1])) {
            *pos = p + 2;   /* a valid prefix cut off by the end: one U+FFFD */
        } else {
            *pos = p + 1;
        }
        return 1;
    }
    if (b1 >= 0xF0 && b1 <= 0xF4) {
        out[0] = REPL;
        size_t n = 1;   /* length of the maximal subpart if malformed */
        if (rem >= 1 && !bad4_2(b1, s[p + 1])) {
            n = 2;
            if (rem >= 2 && is_cont(s[p + 2])) {
                n = 3;
                if (rem >= 3 && is_cont(s[p + 3])) {
                    uint32_t cp = (uint32_t)(b1 & 0x07) << 18 | (uint32_t)(s[p + 1] & 0x3F) << 12 |
                                  (uint32_t)(s[p + 2] & 0x3F) << 6 | (s[p + 3] & 0x3F);
                    cp -= 0x10000;
                    out[0] = (uint16_t)(0xD800 | cp >> 10);
                    out[1] = (uint16_t)(0xDC00 | (cp & 0x3FF));
                    *pos = p + 4;
                    return 2;
                }
            }
        }
        *pos = p + n;
        return 1;
    }
    /* 80..BF (stray continuation), C0, C1 (always overlong), F5..FF. */
    out[0] = REPL;
    *pos = p + 1;
    return 1;
}

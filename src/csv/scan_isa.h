/* src/csv/scan_isa.h - internal: which SIMD variant rs_csv_next uses.
 *
 * rs_csv_next is compiled once per instruction set (scalar, SSE2, AVX2,
 * AVX-512BW) and the best one the CPU supports is chosen before main. Tests
 * switch variants to prove each equal to libcsv; nothing else should. Not
 * thread-safe: call only while no other thread scans. */
#ifndef RINGSHARD_CSV_SCAN_ISA_H
#define RINGSHARD_CSV_SCAN_ISA_H

enum {
    RS_CSV_ISA_AUTO = -1,
    RS_CSV_ISA_SCALAR = 0,
    RS_CSV_ISA_SSE2 = 1,
    RS_CSV_ISA_AVX2 = 2,
    RS_CSV_ISA_AVX512 = 3
};

/* Selects variant `isa` (RS_CSV_ISA_AUTO: the best). Returns 0, or -1 if
 * this CPU or build lacks it (the selection is then unchanged). */
int rs_csv_isa_set(int isa);
int rs_csv_isa_get(void);
const char *rs_csv_isa_name(int isa);

#endif

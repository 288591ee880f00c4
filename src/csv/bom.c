/* The UTF-8 byte order mark before a header (Excel, .NET writers). */
#include <string.h>
#include "ringshard/csv.h"

size_t rs_csv_bom_len(const char *p, size_t len)
{
    return len >= RS_CSV_BOM_LEN && memcmp(p, "\xEF\xBB\xBF", RS_CSV_BOM_LEN) == 0 ? RS_CSV_BOM_LEN : 0;
}

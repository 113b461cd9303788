#include "base/number.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double gf_float_shortest(float f) {
    if (!isfinite(f)) return (double)f;
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) { /* 9 significant digits always read back to the float */
        snprintf(buf, sizeof buf, "%.*g", digits, (double)f);
        const double d = strtod(buf, NULL);
        if ((float)d == f) return d;
    }
    return (double)f;
}

#include "io/json_out.h"

#include <math.h>

gf_jnum gf_json_num(double v, char conv, int prec) {
    gf_jnum r;
    if (prec < 0) prec = 0;
    if (prec > 30) prec = 30;
    if (!isfinite(v)) snprintf(r.s, sizeof r.s, "null");
    else if (conv == 'f' && fabs(v) < 1e21) snprintf(r.s, sizeof r.s, "%.*f", prec, v);
    else if (conv == 'f') snprintf(r.s, sizeof r.s, "%.17g", v);
    else snprintf(r.s, sizeof r.s, "%.*g", prec, v);
    return r;
}

/* Writing JSON by hand (metrics.jsonl, the CLI's --json outputs) so that every JSON parser reads it.
 * JSON has no NaN or infinity: a number that is not finite is written as null (a diverged model's loss
 * and perplexity, for one). cJSON_Print* does the same, so every JSON grassflow writes follows one rule. */
#ifndef GF_IO_JSON_OUT_H
#define GF_IO_JSON_OUT_H

#include <stdio.h>

typedef struct gf_jnum {
    char s[64];
} gf_jnum;

/* v as a JSON number with printf conversion conv ('f' or 'g') and precision prec (at most 30): "null" when
 * v is NaN or infinite; %.17g when 'f' would print more than 21 digits before the point. Returned by
 * value, so it can go straight into printf: printf("{\"loss\": %s}", gf_json_num(loss, 'f', 6).s). */
gf_jnum gf_json_num(double v, char conv, int prec);

/* s as a JSON string to f: quoted, with ", \ and control characters escaped (other bytes as they are). */
void gf_json_put_str(FILE *f, const char *s);

#endif

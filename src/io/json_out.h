/* Writing JSON by hand (metrics.jsonl, the CLI's --json outputs) so that every JSON parser reads it.
 * JSON has no NaN or infinity: a number that is not finite is written as null (a diverged model's loss
 * and perplexity, for one). cJSON_Print* does the same, so every JSON grassflow writes follows one rule. */
#ifndef GF_IO_JSON_OUT_H
#define GF_IO_JSON_OUT_H

#include <stdio.h>

#include "grassflow.h" /* gf_jnum, gf_json_num: public (Utilities); gf_json_put_str: io/escape.c */


#endif

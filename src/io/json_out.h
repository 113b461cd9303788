/* Writing JSON by hand (metrics.jsonl, the CLI's --json outputs) so that every JSON parser reads it.
 * JSON has no NaN or infinity: a number that is not finite is written as null (a diverged model's loss
 * and perplexity, for one). cJSON_Print* does the same, so every JSON grassflow writes follows one rule. */
#ifndef GF_IO_JSON_OUT_H
#define GF_IO_JSON_OUT_H

#include <stdio.h>

#include <cjson/cJSON.h>
#include <stddef.h>

#include "grassflow_plugin.h" /* gf_jnum, gf_json_num: public (Utilities); gf_json_put_str: io/escape.c */

/* And one check of JSON read: JSON lets a name come twice in an object, and cJSON reads the first, so a file
 * with a key twice ({"d_model": 32, "d_model": 64}) would be read one way silently. 1 if an object in v (v
 * itself or one inside it) has a name twice, with where into path ("stacks[1].d_model", at most n bytes);
 * 0 if none. */
int gf_json_duplicate_key(const cJSON *v, char *path, size_t n);


#endif

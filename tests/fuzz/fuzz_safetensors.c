/* libFuzzer: safetensors checkpoints. Every input goes through the validated reader and, when that
 * accepts it, through the model loader (config JSON in the metadata, names, shapes). */
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    gf_st_file *f = gf_st_parse("fuzz.safetensors", buf, size);
    if (!f) return 0;
    gf_model *m = gf_model_from_safetensors(f);
    gf_model_free(m);
    char *cfg = gf_st_metadata(f, "config");
    free(cfg);
    gf_st_free(f);
    return 0;
}

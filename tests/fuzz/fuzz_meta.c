/* libFuzzer: the JSON a checkpoint and a training state carry besides the config: the tokenizer
 * (vocabulary) and the training recipe. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"
#include "train/trainer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    gf_tokenizer *t = gf_tokenizer_from_json(s, "fuzz.safetensors");
    if (t) { /* a tokenizer that loads must also encode and decode */
        gf_ids ids = {0};
        gf_tokenize(t, s, size, "fuzz", &ids);
        char *back = gf_tokenizer_decode(t, ids.v, ids.n, NULL);
        free(back);
        gf_ids_free(&ids);
        gf_tokenizer_free(t);
    }
    gf_train_opts o;
    gf_train_opts_from_json(s, "fuzz.safetensors", &o);
    free(s);
    return 0;
}

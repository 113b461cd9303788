/* A checkpoint with the tokenizer and training recipe that grassflow train stores in its metadata. */
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/error.h"
#include "text/tokenizer.h"
#include "import/import.h"
#include "io/safetensors.h"

/* A file one of the importers reads (a folder is a backbone's, not a checkpoint: gf_import_misplaced says so). */
static bool imported_file(const char *path) {
    struct stat st;
    return !stat(path, &st) && S_ISREG(st.st_mode) && gf_import_detect(path);
}

gf_model *gf_checkpoint_load(const char *path, gf_tokenizer **tok, char **train_json) {
    *tok = NULL;
    if (train_json) *train_json = NULL;
    if (imported_file(path)) return gf_import_load(path, tok); /* another program's file: no recipe */
    gf_st_file *f = gf_st_read(path);
    if (!f) gf_import_misplaced(path, false); /* a folder an importer reads: say so */
    gf_model *m = f ? gf_model_from_safetensors(f) : NULL;
    if (!m) {
        gf_st_free(f);
        return NULL;
    }
    char *tj = gf_st_metadata(f, "tokenizer");
    if (tj) {
        *tok = gf_tokenizer_from_json(tj, path);
        free(tj);
        if (!*tok) {
            gf_st_free(f);
            gf_model_free(m);
            return NULL;
        }
        if ((*tok)->vocab.n != gf_model_config(m)->vocab_size) {
            gf_fail("%s: the stored tokenizer has %lld tokens but the model's vocab_size is %lld (corrupt checkpoint?)",
                    gf_show_name(path), (long long)(*tok)->vocab.n, (long long)gf_model_config(m)->vocab_size);
            gf_tokenizer_free(*tok);
            *tok = NULL;
            gf_st_free(f);
            gf_model_free(m);
            return NULL;
        }
    }
    if (train_json) *train_json = gf_st_metadata(f, "train");
    gf_st_free(f);
    return m;
}

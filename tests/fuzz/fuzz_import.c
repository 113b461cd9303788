/* libFuzzer: a Hugging Face DistilBERT folder (src/import/distilbert.c), written to a temporary folder from
 * the input: config.json, tokenizer_config.json, vocab.txt and model.safetensors in turn, separated by NUL
 * bytes (the last is the rest of the input; a file after the input's last NUL is not written). Then
 * detection, loading, and the message for the folder's weights given as a checkpoint. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grassflow_plugin.h"
#include "import/import.h"

static const char *const FILES[] = {"config.json", "tokenizer_config.json", "vocab.txt", "model.safetensors"};
#define N_FILES 4

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    char dir[64], path[N_FILES][128];
    snprintf(dir, sizeof dir, "/tmp/grassflow-fuzz-import-%ld", (long)getpid());
    mkdir(dir, 0700);
    size_t at = 0;
    for (int i = 0; i < N_FILES; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, FILES[i]);
        unlink(path[i]);
        if (at > size) continue;
        const unsigned char *nul = i < N_FILES - 1 ? memchr(data + at, 0, size - at) : NULL;
        const size_t n = nul ? (size_t)(nul - (data + at)) : size - at;
        FILE *f = fopen(path[i], "wb");
        if (!f) continue;
        fwrite(data + at, 1, n, f);
        fclose(f);
        at += n + 1; /* past the NUL; past the end if there was none, so no later file */
    }
    gf_import_detect(dir);
    gf_tokenizer *tok = NULL;
    gf_model *m = gf_import_load(dir, &tok);
    gf_model_free(m);
    gf_tokenizer_free(tok);
    gf_import_misplaced(path[N_FILES - 1], true);
    for (int i = 0; i < N_FILES; i++) unlink(path[i]);
    rmdir(dir);
    return 0;
}

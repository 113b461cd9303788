/* libFuzzer: the reproductions' checkpoints. The input's first byte chooses how the rest is read: as a torch.save
 * archive (src/io/torch_ckpt.c: zip, data.pkl, storages, tensor views), as a pickle alone (the restricted
 * unpickler), or written to a file and read through an importer: a .grasslm file (src/import/grasslm.c) or an alphaXiv
 * best.pt (src/import/alphaxiv.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "grassflow_plugin.h"

#include "io/pickle.h"
#include "io/torch_ckpt.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!size) return 0;
    if (data[0] & 6) { /* 2: a .grasslm file, 4: an alphaXiv best.pt, each through its importer */
        char path[64];
        snprintf(path, sizeof path, "/tmp/grassflow-fuzz-torch-%ld.%s", (long)getpid(), data[0] & 2 ? "grasslm" : "pt");
        FILE *f = fopen(path, "wb");
        if (!f) return 0;
        fwrite(data + 1, 1, size - 1, f);
        fclose(f);
        gf_tokenizer *tok = NULL;
        gf_model_free(gf_import_load(path, &tok));
        gf_tokenizer_free(tok);
        unlink(path);
        return 0;
    }
    if (data[0] & 1) {
        gf_torch_ckpt c;
        if (!gf_torch_load_buffer(data + 1, size - 1, "fuzz.pt", &c)) {
            float *v = NULL;
            for (int64_t i = 0; i < c.n; i++) { /* every value read once: a view past its storage would show */
                free(v);
                v = malloc((size_t)(c.t[i].numel ? c.t[i].numel : 1) * sizeof *v);
                if (v) gf_torch_to_f32(&c.t[i], v);
            }
            free(v);
            gf_torch_free(&c);
        }
        return 0;
    }
    const gf_pk *root;
    gf_pickle_free(gf_pickle_read(data + 1, size - 1, "fuzz.pkl", &root));
    return 0;
}

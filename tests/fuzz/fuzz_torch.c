/* libFuzzer: PyTorch checkpoints (src/io/torch_ckpt.c): the input's first byte chooses whether the rest is read as
 * a torch.save archive (zip, data.pkl, storages, tensor views) or as a pickle alone (the restricted unpickler). */
#include <stdint.h>
#include <stdlib.h>

#include "io/pickle.h"
#include "io/torch_ckpt.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!size) return 0;
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

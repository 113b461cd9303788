/* libFuzzer: the parsers that read a path: a WordPiece vocabulary file and a token cache (first byte
 * picks which; the cache's own key is taken from its header so that the checks past it run too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tasks/lm/corpus.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/grassflow-fuzz-%ld", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    if (data[0] & 1) {
        gf_tokenizer *t = gf_wordpiece_load(path);
        gf_tokenizer_free(t);
    } else {
        uint64_t key = 0;
        if (size - 1 >= 24) memcpy(&key, data + 1 + 16, 8); /* magic[8], version, pad, key */
        gf_corpus *c = calloc(1, sizeof *c);
        if (c && gf_corpus_cache_load(c, path, key, NULL) == 0) gf_tokenizer_free(c->tok);
        if (c)
            for (int s = 0; s < 3; s++) free(c->split[s].v);
        free(c);
    }
    unlink(path);
    return 0;
}

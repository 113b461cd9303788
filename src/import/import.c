/* The importers grassflow knows, and the one entry point that tries them before grassflow's own format. */
#include "import/import.h"

#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"

static const gf_importer *const IMPORTERS[] = {&gf_importer_distilbert};
#define N_IMPORTERS ((int)(sizeof IMPORTERS / sizeof IMPORTERS[0]))

const char *gf_import_detect(const char *path) {
    for (int i = 0; path && i < N_IMPORTERS; i++)
        if (IMPORTERS[i]->detect(path)) return IMPORTERS[i]->name;
    return NULL;
}

gf_model *gf_import_load(const char *path, gf_tokenizer **tok) {
    *tok = NULL;
    if (!path) {
        gf_fail("no checkpoint path given");
        return NULL;
    }
    for (int i = 0; i < N_IMPORTERS; i++)
        if (IMPORTERS[i]->detect(path)) return IMPORTERS[i]->load(path, tok);
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return gf_checkpoint_load(path, tok, NULL);
    char known[1024] = "";
    for (int i = 0; i < N_IMPORTERS; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s: %s", i ? "; " : "", IMPORTERS[i]->name,
                 IMPORTERS[i]->what);
    gf_fail("%s is a folder, but none that grassflow reads; expected a grassflow checkpoint (a .safetensors file) "
            "or %s", path, known);
    return NULL;
}

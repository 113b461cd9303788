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

/* The importer that reads folder dir, or NULL. */
static const gf_importer *importer_of(const char *dir) {
    for (int i = 0; i < N_IMPORTERS; i++)
        if (IMPORTERS[i]->detect(dir)) return IMPORTERS[i];
    return NULL;
}

int gf_import_misplaced(const char *path, bool not_ours) {
    static const char hint[] = "HINT: grassflow features --ckpt DIR and grassflow train --backbone DIR read the folder; "
                               "eval, score and generate read a checkpoint grassflow train wrote (grassflow train "
                               "--backbone DIR writes one)";
    char saved[4096], dir[GF_PATH_MAX];
    snprintf(saved, sizeof saved, "%s", gf_last_error()); /* detect() clears it */
    struct stat st;
    const gf_importer *imp = NULL;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        if ((imp = importer_of(path)))
            return gf_fail("%s is %s, not a grassflow checkpoint file\n%s", path, imp->label, hint);
    } else if (not_ours && strlen(path) < sizeof dir) {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
        if ((imp = importer_of(dir)))
            return gf_fail("%s: not a grassflow checkpoint (no __metadata__[\"config\"]); this looks like %s's "
                           "weights; pass the folder %s\n%s", path, imp->label, dir, hint);
    }
    gf_fail("%s", saved);
    return 0;
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

/* The importers grassflow knows (built-in and registered), and the one entry point that tries them before
 * grassflow's own format. */
#include "import/import.h"

#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "plugin/plugin.h"
#include "plugin/registry.h"

static const gf_importer *const BUILTIN[] = {&gf_importer_distilbert, &gf_importer_alphaxiv, &gf_importer_grasslm};
static gf_registry g_importers = {(const void *const *)BUILTIN, (int)(sizeof BUILTIN / sizeof BUILTIN[0]), {0}, 0};

int gf_importer_count(void) { return gf_registry_count(&g_importers); }
const gf_importer *gf_importer_at(int i) { return gf_registry_at(&g_importers, i); }

int gf_importer_register(const gf_importer *imp) {
    if (!imp) return gf_fail("gf_importer_register: NULL importer");
    const gf_plugin_desc d = {.fn = "gf_importer_register", .kind = "importer", .name = imp->name,
                              .version = imp->version, .max_version = GF_IMPORTER_VERSION, .name_max = 64};
    if (gf_plugin_check(&d)) return -1;
    if (!imp->what || !imp->label || !imp->detect || !imp->load)
        return gf_fail("gf_importer_register: importer \"%s\" lacks one of what, label, detect, load", imp->name);
    for (int i = 0; i < gf_importer_count(); i++)
        if (!strcmp(gf_importer_at(i)->name, imp->name))
            return gf_fail("gf_importer_register: an importer called %s is registered already", imp->name);
    return gf_registry_add(&g_importers, imp, "importers (gf_importer_register)");
}

const char *gf_import_detect(const char *path) {
    const gf_importer *imp = NULL;
    for (int i = 0; path && (imp = gf_importer_at(i)); i++)
        if (imp->detect(path)) return imp->name;
    return NULL;
}

/* The importer that reads folder dir, or NULL. */
static const gf_importer *importer_of(const char *dir) {
    const gf_importer *imp = NULL;
    for (int i = 0; (imp = gf_importer_at(i)); i++)
        if (imp->detect(dir)) return imp;
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
    const gf_importer *imp = importer_of(path);
    if (imp) return imp->load(path, tok);
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return gf_checkpoint_load(path, tok, NULL);
    char known[1024] = "";
    for (int i = 0; (imp = gf_importer_at(i)) && strlen(known) + 1 < sizeof known; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s: %s", i ? "; " : "", imp->name, imp->what);
    gf_fail("%s is a folder, but none that grassflow reads; expected a grassflow checkpoint (a .safetensors file) "
            "or %s", path, known);
    return NULL;
}

gf_tokenizer *gf_import_bert_vocab(const char *path, int64_t V) {
    char dir[GF_PATH_MAX], vocab[GF_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    const char *data = getenv("GRASSFLOW_DATA");
    const char *const tries[2][2] = {{slash ? dir : ".", "vocab.txt"}, {data, "bert-base-uncased/vocab.txt"}};
    for (int i = 0; i < 2; i++) {
        if (!tries[i][0] || gf_path_join(vocab, sizeof vocab, tries[i][0], tries[i][1]) || access(vocab, R_OK)) continue;
        gf_tokenizer *t = gf_wordpiece_load(vocab);
        if (t && gf_tokenizer_vocab_size(t) == V) return t;
        gf_tokenizer_free(t);
    }
    return NULL;
}

bool gf_import_config_is(const gf_config *c, const char *key, const char *want, const char *dflt) {
    char *v = gf_config_get(c, key);
    const bool ok = !strcmp(v ? v : dflt, want);
    free(v);
    return ok;
}

bool gf_import_plain_lm(const gf_config *c, const char *norm) {
    return gf_import_config_is(c, "norm", norm, "") && gf_import_config_is(c, "pos", "\"learned\"", "") &&
           gf_import_config_is(c, "tie_head", "true", "") && gf_import_config_is(c, "gelu", "\"erf\"", "") &&
           gf_import_config_is(c, "ln_eps", "1e-05", "") && gf_import_config_is(c, "head.kind", "\"next_token\"", "") &&
           c->source_vocab == 0 && c->n_stacks == 0;
}

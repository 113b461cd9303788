/* A classifier on a pretrained checkpoint (grassflow's, or one an importer reads: a Hugging Face DistilBERT
 * folder): the checkpoint's embeddings and blocks become the first stack of the model, and a head stack
 * read from a JSON file (a "stacks" entry: name, d_model, d_ff, n_layer, direction, layers) goes on top,
 * reading it through head.in_proj. The checkpoint's own output layer (an LM head) is not used. Public:
 * gf_backbone_config, gf_backbone_load (include/grassflow.h). Messages name the checkpoint as grassflow
 * train's --backbone does. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "grassflow_plugin.h"
#include "io/file.h"
#include "io/json_out.h"

/* What the backbone contributes: its embeddings and its first stack's blocks. */
static const char *const BODY[] = {"tok_emb.", "pos_emb.", "seg_emb.", "emb_ln.", "in_proj.", "blocks.", NULL};

static cJSON *read_head(const char *path) {
    size_t n;
    char *txt = (char *)gf_read_file(path, (size_t)1 << 20, &n);
    if (!txt) return NULL;
    if (strlen(txt) != n) { /* the parser would stop at it, and read what comes before as the whole file */
        free(txt);
        gf_fail("%s: contains a NUL byte; expected a JSON text file", path);
        return NULL;
    }
    cJSON *h = cJSON_Parse(txt);
    free(txt);
    char dup[256] = "";
    if (!cJSON_IsObject(h)) {
        cJSON_Delete(h);
        gf_fail("%s: not a JSON object; expected one stack: {\"name\": \"head\", \"d_model\": ..., \"d_ff\": ..., "
                "\"n_layer\": ..., \"layers\": [...]} (docs/model.md, stacks)", path);
        return NULL;
    }
    if (gf_json_duplicate_key(h, dup, sizeof dup)) {
        cJSON_Delete(h);
        gf_fail("%s: the key \"%s\" appears twice; expected each key once: which to read is not clear", path, dup);
        return NULL;
    }
    if (!cJSON_GetObjectItemCaseSensitive(h, "name")) cJSON_AddStringToObject(h, "name", "head");
    return h;
}

/* A grassflow classifier (a file: an imported folder is read as a classifier with a fresh head) is no
 * backbone: its blocks learned to feed its own head. */
static int classifier_backbone(const char *ckpt, const gf_model *b) {
    struct stat st;
    if (gf_model_predicts_next_token(b) || stat(ckpt, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    return gf_fail("--backbone %s is a classifier (head %s, %lld classes), not a pretrained model to put a head on\n"
                   "HINT: a language model from grassflow train (on the WordPiece vocabulary), or a Hugging Face "
                   "DistilBERT folder; to score the classifier itself: grassflow eval --ckpt %s", ckpt,
                   gf_model_config(b)->head_kind, (long long)gf_model_n_outputs(b), ckpt);
}

/* The backbone's config (JSON) with the head stack on top, into *cfg. */
static int stack_head(const char *ckpt, const char *head_path, cJSON *o, cJSON *head, gf_config *cfg) {
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "stacks")) > 0) {
        cJSON_Delete(head);
        return gf_fail("--backbone %s has stacks of its own; a backbone is one stack of blocks", ckpt);
    }
    cJSON_DeleteItemFromObject(o, "stacks");
    cJSON_DeleteItemFromObject(o, "head");
    cJSON_DeleteItemFromObject(o, "task");
    cJSON_DeleteItemFromObject(o, "label_smoothing"); /* the backbone's training loss, not its architecture */
    /* n_classes 2, the fewest there are, until the run sets the task's own number once its data is read */
    cJSON_AddItemToObject(o, "head", cJSON_Parse("{\"kind\": \"classify\", \"n_classes\": 2}"));
    cJSON *st = cJSON_AddArrayToObject(o, "stacks");
    cJSON_AddItemToArray(st, head);
    char *js = cJSON_PrintUnformatted(o), src[GF_PATH_MAX + 64];
    snprintf(src, sizeof src, "--backbone %.2000s with --head %.2000s", ckpt, head_path);
    const int rc = !js ? gf_fail("out of memory") : gf_config_from_json(js, src, cfg) ? -1 : 0;
    free(js);
    return rc;
}

int gf_backbone_config(const char *ckpt, const char *head_path, gf_config *cfg, gf_tokenizer **tok) {
    *tok = NULL;
    gf_model *b = gf_import_load(ckpt, tok); /* grassflow's own, or a Hugging Face DistilBERT folder */
    if (!b) {
        char msg[4096]; /* the importer's message, with the checkpoint's flag in front */
        snprintf(msg, sizeof msg, "%s", gf_last_error());
        return gf_fail("--backbone %s", msg);
    }
    int rc = classifier_backbone(ckpt, b);
    char *bj = rc ? NULL : gf_config_to_json(gf_model_config(b), false);
    gf_model_free(b);
    cJSON *o = bj ? cJSON_Parse(bj) : NULL, *head = o ? read_head(head_path) : NULL;
    free(bj);
    if (!rc && !o) rc = gf_fail("out of memory");
    else if (!rc && !head) rc = -1; /* read_head said why */
    else if (!rc) rc = stack_head(ckpt, head_path, o, head, cfg);
    cJSON_Delete(o);
    if (rc) {
        gf_tokenizer_free(*tok);
        *tok = NULL;
    }
    return rc ? -1 : 0;
}

int gf_backbone_load(gf_model *m, const char *ckpt, bool freeze) {
    gf_tokenizer *tok = NULL;
    gf_model *b = gf_import_load(ckpt, &tok);
    int n = b ? gf_model_copy_tensors(m, b, BODY) : -1;
    gf_model_free(b);
    gf_tokenizer_free(tok);
    if (n < 0) {
        char msg[4096];
        snprintf(msg, sizeof msg, "%s", gf_last_error());
        return gf_fail("--backbone %s: %s", ckpt, msg);
    }
    if (freeze && gf_model_freeze_stack(m, 0) < 0) return -1; /* by structure */
    gf_note("%d tensors from the backbone %s%s", n, ckpt, freeze ? ", frozen" : ", fine-tuned");
    return 0;
}

/* Importers: checkpoints written by other tools, read as grassflow models (gf_import_load in grassflow.h).
 * One file per format, each exporting one gf_importer listed in import.c. */
#ifndef GF_IMPORT_IMPORT_H
#define GF_IMPORT_IMPORT_H

#include <stdbool.h>

#include "grassflow.h"

typedef struct gf_importer {
    const char *name;     /* "hf-distilbert" */
    const char *what;     /* one line for messages: "a Hugging Face DistilBERT folder (config.json, ...)" */
    const char *label;    /* a few words for messages: "a Hugging Face DistilBERT folder" */
    /* Whether path is this format (cheap: a file name, a config field); never an error. */
    bool (*detect)(const char *path);
    /* The model and its tokenizer (*tok, NULL if the format has none); NULL + gf_fail naming the file. */
    gf_model *(*load)(const char *path, gf_tokenizer **tok);
} gf_importer;

extern const gf_importer gf_importer_distilbert;

/* For the readers of grassflow's checkpoint files, when path is none: if path is a folder an importer reads,
 * or (not_ours: a safetensors file without grassflow's config) a file inside one (DIR/model.safetensors),
 * an error saying so, naming the folder and where grassflow reads it; returns -1. Else 0 and the caller's
 * error stands. */
int gf_import_misplaced(const char *path, bool not_ours);

#endif

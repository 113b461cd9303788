/* Importers: checkpoints written by other tools, read as grassflow models (gf_import_load and gf_importer in
 * grassflow.h). One file per format: a built-in one exports its gf_importer, listed in import.c; a program's
 * own registers with gf_importer_register. */
#ifndef GF_IMPORT_IMPORT_H
#define GF_IMPORT_IMPORT_H

#include <stdbool.h>

#include "grassflow_plugin.h"

extern const gf_importer gf_importer_distilbert;
extern const gf_importer gf_importer_alphaxiv;
extern const gf_importer gf_importer_grasslm;

/* BERT's uncased WordPiece vocabulary for a checkpoint that does not carry its tokenizer: vocab.txt beside path,
 * else GRASSFLOW_DATA's bert-base-uncased/vocab.txt (the CLI points it at its data/), each only when it has V
 * pieces; NULL when neither does. */
gf_tokenizer *gf_import_bert_vocab(const char *path, int64_t V);
/* For an exporter's checks: whether the config's value at key (its JSON text, gf_config_get) is want; a key the
 * config does not write back reads as dflt. */
bool gf_import_config_is(const gf_config *c, const char *key, const char *want, const char *dflt);
/* Whether c is a one-stack language model with learned positions, a tied head, GELU (erf), LayerNorm eps 1e-5 and
 * norm (its JSON text): what the reproductions' models all are. */
bool gf_import_plain_lm(const gf_config *c, const char *norm);

/* For the readers of grassflow's checkpoint files, when path is none: if path is a folder an importer reads,
 * or (not_ours: a safetensors file without grassflow's config) a file inside one (DIR/model.safetensors),
 * an error saying so, naming the folder and where grassflow reads it; returns -1. Else 0 and the caller's
 * error stands. */
int gf_import_misplaced(const char *path, bool not_ours);

#endif

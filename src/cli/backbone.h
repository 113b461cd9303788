/* A classifier on a pretrained checkpoint (train --backbone CKPT --head FILE): grassflow's own, or a folder
 * an importer reads (gf_import_load: a Hugging Face DistilBERT). */
#ifndef GF_CLI_BACKBONE_H
#define GF_CLI_BACKBONE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/cli.h"

/* The config of backbone ckpt's model (as the first stack, its output layer dropped) with the head stack
 * of head_path on top and a classify head (its n_classes a placeholder the task sets); *tok: the backbone's tokenizer (NULL if it has none).
 * Returns an exit code. */
int cli_backbone_config(const char *ckpt, const char *head_path, gf_config *cfg, gf_tokenizer **tok);
/* Copy the backbone's embeddings and blocks into m; freeze them if asked. */
int cli_backbone_load_weights(gf_model *m, const char *ckpt, bool freeze);

#endif

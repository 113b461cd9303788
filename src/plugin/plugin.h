/* The plug-in kernel: what mixers and heads are checked against, in one place.
 *
 * The interface itself (gf_mixer_ops, gf_head_ops, their call structs, gf_cfg_key, gf_param_spec) is public,
 * in include/grassflow.h, "Plug-ins: mixers and heads". Here, beside the key schema (plugin/schema.h) and
 * the registry store (plugin/registry.h), are the checks a table must pass to be added. The registries
 * (mixers/mixer.c, heads/head.c) run every table through them: one a program registers before it is
 * added, each built-in one in tests/unit/test_plugin.c (gf_mixer_check_at, gf_head_check_at), so a built-in
 * table that gf_mixer_register would refuse fails a test.
 *
 * plugin/ includes core/ and grassflow.h only: mixers/, heads/ and model/ include it, never the reverse. */
#ifndef GF_PLUGIN_PLUGIN_H
#define GF_PLUGIN_PLUGIN_H

#include <stddef.h>

#include "grassflow_plugin.h"
#include "plugin/registry.h"
#include "plugin/schema.h"

/* What every plug-in table must satisfy, for fn ("gf_mixer_register") and kind ("mixer"): a name of 1 to
 * name_max - 1 characters among [A-Za-z0-9_-], an interface version in [1, max_version], a config of at
 * most config_max bytes and a sound key table (gf_keys_check). */
typedef struct gf_plugin_desc {
    const char *fn, *kind, *name;
    int version, max_version, name_max;
    size_t config_size, config_max;
    const gf_cfg_key *keys;
    int n_keys;
} gf_plugin_desc;
int gf_plugin_check(const gf_plugin_desc *d);

/* Everything gf_mixer_register checks of ops: gf_plugin_check, its letter (0, or [A-Za-z0-9]), its
 * directions, its functions, and that neither its name nor its letter is taken by the first n_before
 * mixers of r (as gf_mixer_find would see them: a one-character name is taken by a letter too). fn names
 * the caller in the message. 0 or -1 (gf_fail). */
int gf_mixer_ops_check(const gf_mixer_ops *ops, const char *fn, const gf_registry *r, int n_before);
/* The same for a head: gf_plugin_check, its direction (causal, or bidirectional without causal_only), its
 * functions, and a name the first n_before heads of r do not have. */
int gf_head_ops_check(const gf_head_ops *ops, const char *fn, const gf_registry *r, int n_before);

#endif

/* Built-in model presets, written as configs (format 3; keys in docs/model.md). All use norm "pre"; the
 * paper's "post" is one --set away. A preset may start from another ("base"). */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "grassflow_plugin.h"

#define Q(...) #__VA_ARGS__
static const struct {
    const char *name, *json;
} PRESETS[] = {
    /* the paper's Table 1 models: 6 layers, d 256, block 128; rank 32 and offsets 1..16 in every layer */
    {"grassmann-6L", Q({"format": 3, "head": {"kind": "next_token"}, "vocab_size": 30522, "d_model": 256, "n_layer": 6, "d_ff": 1024,
                        "max_len": 128, "norm": "pre", "tie_head": true, "gelu": "erf", "pos": "learned",
                        "dropout": 0.1, "layers": [{"mixer": "grassmann", "rank": 32, "offsets": [1, 2, 4, 8, 12, 16],
                                                    "plucker_eps": 1e-8, "extra_proj": false}]})},
    {"transformer-6L", Q({"base": "grassmann-6L", "format": 3, "layers": [{"mixer": "attention", "n_head": 4}]})},
    /* Table 2: 12 layers, block 256, one offset per layer 1,1,2,2,...,16,16 */
    {"grassmann-12L", Q({"base": "grassmann-6L", "format": 3, "n_layer": 12, "max_len": 256,
                         "offsets": [[1], [1], [2], [2], [4], [4], [8], [8], [12], [12], [16], [16]]})},
    {"transformer-12L", Q({"base": "transformer-6L", "format": 3, "n_layer": 12, "max_len": 256})},
    /* the quick-start models: a few minutes of WikiText-2 on two cores */
    {"grassmann-small", Q({"base": "grassmann-6L", "format": 3, "n_layer": 4, "d_model": 128, "d_ff": 512, "rank": 16})},
    {"transformer-small", Q({"base": "transformer-6L", "format": 3, "n_layer": 4, "d_model": 128, "d_ff": 512})},
    /* hybrids: attention kept in a few layers of a Grassmann stack (an attention layer has 4d^2 + 4d
     * parameters, a Grassmann layer of rank 32 at d 256 about as many: each is size-matched to its pair) */
    {"hybrid-last-6L", Q({"base": "grassmann-6L", "format": 3,
                          "layers": [{"mixer": "grassmann"}, {"mixer": "grassmann"}, {"mixer": "grassmann"},
                                     {"mixer": "grassmann"}, {"mixer": "grassmann"}, {"mixer": "attention", "n_head": 4}]})},
    {"hybrid-middle-6L", Q({"base": "grassmann-6L", "format": 3,
                            "layers": [{"mixer": "grassmann"}, {"mixer": "grassmann"}, {"mixer": "grassmann"},
                                       {"mixer": "attention", "n_head": 4}, {"mixer": "grassmann"}, {"mixer": "grassmann"}]})},
    {"hybrid-window-6L", Q({"base": "grassmann-6L", "format": 3,
                            "layers": [{"mixer": "grassmann"}, {"mixer": "window", "n_head": 4, "window": 32}, {"mixer": "grassmann"},
                                       {"mixer": "window", "n_head": 4, "window": 32}, {"mixer": "grassmann"}, {"mixer": "window", "n_head": 4, "window": 32}]})},
    {"hybrid-last-small", Q({"base": "grassmann-small", "format": 3,
                             "layers": [{"mixer": "grassmann"}, {"mixer": "grassmann"}, {"mixer": "grassmann"},
                                        {"mixer": "attention", "n_head": 4}]})},
    {"hybrid-middle-small", Q({"base": "grassmann-small", "format": 3,
                               "layers": [{"mixer": "grassmann"}, {"mixer": "grassmann"}, {"mixer": "attention", "n_head": 4},
                                          {"mixer": "grassmann"}]})},
    {"hybrid-window-small", Q({"base": "grassmann-small", "format": 3,
                               "layers": [{"mixer": "grassmann"}, {"mixer": "window", "n_head": 4, "window": 32}, {"mixer": "grassmann"},
                                          {"mixer": "window", "n_head": 4, "window": 32}]})},
    /* efficient attention in place of attention: the Transformer presets with the mixer swapped (window
     * attention: w 32, a quarter of max_len, no global tokens; the performer: its default 128 features) */
    {"window-6L", Q({"base": "transformer-6L", "format": 3, "layers": [{"mixer": "window", "n_head": 4, "window": 32}]})},
    {"window-small", Q({"base": "transformer-small", "format": 3, "layers": [{"mixer": "window", "n_head": 4, "window": 32}]})},
    {"performer-6L", Q({"base": "transformer-6L", "format": 3, "layers": [{"mixer": "performer", "n_head": 4}]})},
    {"performer-small", Q({"base": "transformer-small", "format": 3, "layers": [{"mixer": "performer", "n_head": 4}]})},
    /* encoder-decoders for grapheme-to-phoneme (task g2p; docs/model.md, "Encoder-decoders"): a bidirectional
     * encoder of 3 blocks over the word's bytes, a causal decoder of 3 over the phonemes attending to it; the
     * vocabularies are the task's */
    {"transformer-g2p", Q({"format": 3, "head": {"kind": "next_token"}, "vocab_size": 71, "source_vocab": 256,
                           "cross_heads": 4, "d_model": 256, "n_layer": 3, "d_ff": 1024, "max_len": 64, "norm": "pre",
                           "pos": "learned", "dropout": 0.1, "direction": "bidirectional",
                           "layers": [{"mixer": "attention", "n_head": 4}],
                           "stacks": [{"name": "decoder", "d_model": 256, "d_ff": 1024, "n_layer": 3, "direction": "causal",
                                       "layers": [{"mixer": "attention", "n_head": 4}]}]})},
    {"grassmann-g2p", Q({"format": 3, "head": {"kind": "next_token"}, "vocab_size": 71, "source_vocab": 256,
                         "cross_heads": 4, "d_model": 256, "n_layer": 3, "d_ff": 1024, "max_len": 64, "norm": "pre",
                         "pos": "learned", "dropout": 0.1, "direction": "bidirectional",
                         "layers": [{"mixer": "grassmann", "rank": 32, "offsets": [1, 2, 4, 8, 12, 16]}],
                         "stacks": [{"name": "decoder", "d_model": 256, "d_ff": 1024, "n_layer": 3, "direction": "causal",
                                     "layers": [{"mixer": "grassmann", "rank": 32, "offsets": [1, 2, 4, 8, 12, 16]}]}]})},
    /* the recurrent family: a bidirectional GRU encoder of 2 blocks, a decoder of 2 GRU layers that attend to it
     * themselves (gru-attn: Luong's general score with input feeding; --set attention=none|bahdanau|dot|concat) */
    {"gru-g2p", Q({"format": 3, "head": {"kind": "next_token"}, "vocab_size": 71, "source_vocab": 256,
                   "cross_heads": 1, "d_model": 256, "n_layer": 2, "d_ff": 1024, "max_len": 64, "norm": "pre",
                   "pos": "none", "dropout": 0.1, "direction": "bidirectional", "layers": [{"mixer": "gru"}],
                   "stacks": [{"name": "decoder", "d_model": 256, "d_ff": 1024, "n_layer": 2, "direction": "causal",
                               "layers": [{"mixer": "gru-attn", "attention": "general"}]}]})},
    /* for the tests */
    {"grassmann-tiny", Q({"base": "grassmann-6L", "format": 3, "vocab_size": 64, "d_model": 32, "n_layer": 2,
                          "d_ff": 64, "max_len": 32, "rank": 6, "dropout": 0})},
    {"transformer-tiny", Q({"base": "transformer-6L", "format": 3, "vocab_size": 64, "d_model": 32, "n_layer": 2,
                            "d_ff": 64, "max_len": 32, "dropout": 0})},
    {"hybrid-tiny", Q({"base": "grassmann-tiny", "format": 3, "n_layer": 3,
                       "layers": [{"mixer": "grassmann"}, {"mixer": "attention", "n_head": 4}, {"mixer": "grassmann"}]})},
};
#undef Q
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

static const char *g_names[N_PRESETS + 1];

const char *const *gf_preset_names(void) {
    for (int i = 0; i < N_PRESETS; i++) g_names[i] = PRESETS[i].name;
    return g_names;
}

int gf_config_preset(const char *name, gf_config *c) {
    if (!name) return gf_fail("no preset name given");
    for (int i = 0; i < N_PRESETS; i++) {
        if (strcmp(name, PRESETS[i].name) != 0) continue;
        char src[64];
        snprintf(src, sizeof src, "preset %s", name);
        return gf_config_from_json(PRESETS[i].json, src, c);
    }
    char list[512] = "";
    for (int i = 0; i < N_PRESETS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", PRESETS[i].name);
    return gf_fail("unknown model preset '%s'; expected one of: %s\nHINT: or give --config FILE.json", name, list);
}

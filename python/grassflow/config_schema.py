"""A grassflow config read as the C library reads it, for the PyTorch model (grassflow.torch_model): every key's
type and range (the key tables of src/config/config.c, src/config/stacks.c, src/mixers/*.c, src/heads/*.c) and
the checks across keys, with the C side's messages. What the library refuses is a ValueError here; the one
form the module does not read is "base" (a preset), which a checkpoint's config never holds.

normalize(cfg, src) returns the config with every model key, "task" ("lm" or "classify"), "head" (its keys),
"layers" (one dict per layer of the first stack, its mixer's every key) and "stacks" (each with its layers).
"""
import collections
import json
import struct

Key = collections.namedtuple("Key", "kind lo hi names lo_open hi_open max_count")


def _key(kind, lo=None, hi=None, names=None, lo_open=False, hi_open=False, max_count=None):
    return Key(kind, lo, hi, names, lo_open, hi_open, max_count)


NORMS, DIRECTIONS = ("pre", "post"), ("causal", "bidirectional")
MAX_LAYERS, MAX_STACKS, CONFIG_FORMAT = 64, 4, 3
# the model's keys (src/config/config.c KEYS) and their defaults; d_model, n_layer and d_ff have none
MODEL_KEYS = {
    "input": _key("enum", names=("tokens", "vectors")), "d_input": _key("int", 0, 1 << 20),
    "vocab_size": _key("int", 0, 2147483647), "d_model": _key("int", 1, 65536), "n_layer": _key("int", 1, MAX_LAYERS),
    "d_ff": _key("int", 1, 1 << 20), "max_len": _key("int", 0, 1 << 24), "norm": _key("enum", names=NORMS),
    "tie_head": _key("bool"), "gelu": _key("enum", names=("erf", "tanh")),
    "pos": _key("enum", names=("learned", "sinusoidal", "none", "sinusoidal-2d")), "segments": _key("int", 0, 255),
    "emb_norm": _key("bool"), "ln_eps": _key("float", 0, 1, lo_open=True), "dropout": _key("float", 0, 1, hi_open=True),
    "direction": _key("enum", names=DIRECTIONS), "source_vocab": _key("int", 0, 2147483647),
    "cross_heads": _key("int", 0, 65536), "pos_grid": _key("int", 0, 1 << 16), "init_std": _key("float", 0, 1),
    "label_smoothing": _key("float", 0, 1, hi_open=True)}
MODEL_DEFAULTS = {"input": "tokens", "d_input": 0, "vocab_size": 0, "max_len": 0, "norm": "pre", "tie_head": True,
                  "gelu": "erf", "pos": "learned", "segments": 0, "emb_norm": False, "ln_eps": 1e-5, "dropout": 0.0,
                  "source_vocab": 0, "cross_heads": 0, "pos_grid": 0, "init_std": 0.0,
                  "label_smoothing": 0.0}
_N_HEAD = _key("int", 1, 65536)
MIXER_KEYS = {  # in the library's registration order (a key two mixers share is the first one's at the top level)
    "grassmann": {"rank": _key("int", 2, 256), "offsets": _key("ints", 1, 1 << 20, max_count=16),
                  "plucker_eps": _key("float", 0, 1e30, lo_open=True), "heads": _key("int", 1, 128),
                  "window": _key("int", 0, 1 << 24), "grid": _key("int", 0, 1 << 16), "extra_proj": _key("bool"),
                  "plucker": _key("bool"), "gate": _key("bool"),
                  "gate_form": _key("enum", names=("channel", "scalar")), "conv": _key("int", 0, 16),
                  "offset_mix": _key("enum", names=("mean", "learned", "token"))},
    "attention": {"n_head": _N_HEAD},
    "linformer": {"n_head": _N_HEAD, "k_proj": _key("int", 1, 1 << 24)},
    "window": {"n_head": _N_HEAD, "window": _key("int", 1, 1 << 24), "n_global": _key("int", 0, 1 << 24)},
    "performer": {"n_head": _N_HEAD, "features": _key("int", 1, 65536), "redraw": _key("int", 0, 1e15)},
    "gru": {},
    "gru-attn": {"attention": _key("enum", names=("none", "bahdanau", "dot", "general", "concat")),
                 "input_feeding": _key("bool")},
    "token-mlp": {"hidden": _key("int", 1, 1 << 16)},
    "fixed-mix": {"n_head": _N_HEAD, "span": _key("int", 0, 1 << 20)},
    "attn-form": {"n_head": _N_HEAD, "form": _key("enum", names=("relu", "sigmoid", "l1"))},
    "emb-qk": {"n_head": _N_HEAD}}
MIXER_DEFAULTS = {"grassmann": {"rank": 32, "offsets": [1, 2, 4, 8, 12, 16], "plucker_eps": 1e-8, "heads": 1,
                                "window": 0, "grid": 0, "extra_proj": False, "plucker": True, "gate": True,
                                "gate_form": "channel", "conv": 0, "offset_mix": "mean"},
                  "attention": {"n_head": 4}, "linformer": {"n_head": 4, "k_proj": 32},
                  "window": {"n_head": 4, "window": 64, "n_global": 0},
                  "performer": {"n_head": 4, "features": 128, "redraw": 0}, "gru": {},
                  "gru-attn": {"attention": "general", "input_feeding": True}, "token-mlp": {"hidden": 64},
                  "fixed-mix": {"n_head": 4, "span": 0}, "attn-form": {"n_head": 4, "form": "relu"},
                  "emb-qk": {"n_head": 4}}
# the mixers that read an encoder's output themselves (src/mixers: reads_memory): decoder layers only, whose
# default block kinds are then the plain ones
MEMORY_MIXERS = {"gru-attn"}
BIDIRECTIONAL_ONLY = {"linformer"}
HEAD_KEYS = {"next_token": {}, "classify": {"n_classes": _key("int", 2, 4096), "pool": _key("enum", names=("mean", "first", "last", "pair"))}}
HEAD_DEFAULTS = {"next_token": {}, "classify": {"n_classes": 2, "pool": "mean"}}
HEAD_DIRECTION = {"next_token": "causal", "classify": "bidirectional"}
# the block kinds a layer's "block" may name (src/model/block.c's table; a program's own are added to it, as
# grassflow.torch_model.register_block does); a layer without one has its stack's norm's kind
BLOCK_KINDS = {"pre", "post-gated", "post-residual", "pre-mix-norm", "decoder-pre", "decoder-post", "decoder-post-gated"}
# the kinds with a cross op: an encoder-decoder's decoder layers have one, every other layer none
CROSS_KINDS = {"decoder-pre", "decoder-post", "decoder-post-gated"}
STACK_KEYS = {"d_model": MODEL_KEYS["d_model"], "d_ff": MODEL_KEYS["d_ff"], "n_layer": MODEL_KEYS["n_layer"],
              "norm": MODEL_KEYS["norm"], "direction": MODEL_KEYS["direction"]}
RESERVED_NAMES = ("tok_emb", "pos_emb", "seg_emb", "emb_ln", "in_proj", "blocks", "ln_f")
FORMAT1_KEYS = ("vocab_size", "d_model", "n_layer", "n_head", "d_ff", "max_len", "rank", "offsets", "mixers", "norm",
                "plucker_eps", "extra_proj", "tie_head", "gelu", "pos", "dropout")
ONLY_FORMAT2 = ("layers", "task", "head", "direction", "input", "d_input", "stacks", "segments", "emb_norm", "ln_eps")
STRUCTURE_KEYS = ("base", "format", "task", "head", "layers", "mixers", "stacks")


def _fail(msg, *args):
    raise ValueError(msg % args)


def _range(k):
    return "%s%.15g, %.15g%s" % ("(" if k.lo_open else "[", k.lo, k.hi, ")" if k.hi_open else "]")


def _in_range(k, v):
    return (v > k.lo if k.lo_open else v >= k.lo) and (v < k.hi if k.hi_open else v <= k.hi)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _as_float32(v):
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def check_value(k, v, src, shown):
    """v (a JSON value) as key k takes it, or ValueError in the words of src/plugin/schema.c."""
    if k.kind == "int":
        if not _number(v) or v != v or v in (float("inf"), float("-inf")) or v != int(v):
            _fail("%s: \"%s\" must be an integer in %s", src, shown, _range(k))
        if not _in_range(k, v):
            _fail("%s: \"%s\" is %.17g; expected an integer in %s", src, shown, v, _range(k))
        return int(v)
    if k.kind == "float":
        if not _number(v) or not -float("inf") < v < float("inf"):
            _fail("%s: \"%s\" must be a finite number in %s", src, shown, _range(k))
        if not _in_range(k, v) or not _in_range(k, _as_float32(v)):
            _fail("%s: \"%s\" is %g; expected a number in %s", src, shown, v, _range(k))
        return float(v)
    if k.kind == "bool":
        if not isinstance(v, bool):
            _fail("%s: \"%s\" must be true or false", src, shown)
        return v
    if k.kind == "enum":
        if not isinstance(v, str) or v not in k.names:
            _fail("%s: \"%s\" must be one of %s", src, shown, ", ".join('"%s"' % n for n in k.names))
        return v
    if not isinstance(v, list) or not 1 <= len(v) <= k.max_count:
        _fail("%s: \"%s\" must be a non-empty list of at most %d integers, e.g. [1,2,4]", src, shown, k.max_count)
    return [check_value(k._replace(kind="int"), x, src, "%s[%d]" % (shown, i)) for i, x in enumerate(v)]


def _format(cfg, src):
    """The format: as given, else 2 if a key that format 1 did not have is there, else 1 (read_format)."""
    if "format" not in cfg:
        return 2 if any(k in cfg for k in ONLY_FORMAT2) else 1
    f = cfg["format"]
    if not _number(f) or f != f or f in (float("inf"), float("-inf")) or f != int(f):
        _fail("%s: \"format\" must be an integer (the config format, %d for this version)", src, CONFIG_FORMAT)
    if not 1 <= f <= CONFIG_FORMAT:
        _fail("%s: config format %.17g is not one this grassflow reads: formats 1 to %d\nHINT: a newer grassflow wrote "
              "it; upgrade", src, f, CONFIG_FORMAT)
    return int(f)


def _mixer_with_key(name):
    return next((m for m, keys in MIXER_KEYS.items() if name in keys), None)


def _known_keys(cfg, src):
    for k in cfg:
        if k == "base":
            _fail("%s: \"base\" (a preset to start from) is not read by the PyTorch model; give the whole config (a "
                  "checkpoint's holds every key)", src)
        if k not in STRUCTURE_KEYS and k not in MODEL_KEYS and not _mixer_with_key(k):
            _fail("%s: unknown key \"%s\"; the keys are: format, task, head, %s, layers (or mixers), stacks; mixer "
                  "keys (in a layer's entry, or for every layer that has them): %s", src, k, ", ".join(MODEL_KEYS),
                  "; ".join("%s: %s" % (m, ", ".join(keys)) for m, keys in MIXER_KEYS.items()))


def _required(cfg, fmt, src):
    for k in FORMAT1_KEYS if fmt == 1 else ("d_model", "n_layer", "d_ff"):
        if k not in cfg:
            _fail("%s: missing key \"%s\"\nHINT: give every %skey", src, k, "" if fmt == 1 else "required ")
    if "layers" not in cfg and "mixers" not in cfg:
        _fail("%s: missing key \"layers\" (one entry per layer, e.g. [{\"mixer\": \"grassmann\"}])", src)


def _head(cfg, src):
    """The head's kind ("next_token" or "classify") and its keys."""
    task, head = cfg.get("task"), cfg.get("head")
    kind = head.get("kind") if isinstance(head, dict) else None
    if "task" in cfg and kind is not None:
        _fail("%s: the head's kind is given twice, as \"task\" and as \"head\": {\"kind\"}\nHINT: give head.kind only "
              "(\"task\" is its name in config formats 1 and 2)", src)
    name = kind if kind is not None else task if "task" in cfg else "next_token"
    name = "next_token" if name == "lm" else name
    if not isinstance(name, str) or name not in HEAD_KEYS:
        _fail("%s: \"%s\" is %s; it must be one of %s", src, "head.kind" if kind is not None else "task",
              json.dumps(name), ", ".join('"%s"' % n for n in HEAD_KEYS))
    if head is not None and not isinstance(head, dict):
        _fail("%s: \"head\" must be an object of the %s head's keys", src, name)
    out = dict(HEAD_DEFAULTS[name])
    for k, v in (head or {}).items():
        if k == "kind":
            continue
        if k not in HEAD_KEYS[name]:
            _fail("%s: the %s head has no key \"%s\"; its keys are: %s", src, name, k,
                  ", ".join(HEAD_KEYS[name]) or "(none)")
        out[k] = check_value(HEAD_KEYS[name][k], v, src, "head.%s" % k)
    return name, out


def _fits_layers(lst, n_layer, src, key):
    if len(lst) == n_layer:
        return
    same = len(lst) >= 1 and all(json.dumps(x, sort_keys=True) == json.dumps(lst[0], sort_keys=True) for x in lst)
    if not same:
        _fail("%s: \"%s\" has %d entries but n_layer is %d; give one entry per layer, or one entry for all layers",
              src, key, len(lst), n_layer)


def _entry_for(lst, l, n_layer):
    return lst[l if len(lst) == n_layer else 0]


def _new_layer(name, src, shown):
    if not isinstance(name, str) or name not in MIXER_KEYS:
        _fail("%s: %s is \"%s\"; it must be one of the mixers %s", src, shown, name,
              ", ".join('"%s"' % m for m in MIXER_KEYS))
    return dict(MIXER_DEFAULTS[name], mixer=name)


def _parse_entry(e, idx, src):
    """One "layers" entry: a mixer name, or {"mixer": NAME, KEY: VALUE, ...}."""
    name = e if isinstance(e, str) else e.get("mixer") if isinstance(e, dict) else None
    if not isinstance(name, str):
        _fail("%s: \"layers\"[%d] must be a mixer name or an object with \"mixer\": NAME and that mixer's keys, e.g. "
              "{\"mixer\": \"grassmann\", \"rank\": 32}", src, idx)
    layer = _new_layer(name, src, "\"layers\"[%d].mixer" % idx)
    keys = MIXER_KEYS[name]
    for k, v in (e.items() if isinstance(e, dict) else ()):
        if k == "mixer":
            continue
        if k == "block":
            if not isinstance(v, str) or v not in BLOCK_KINDS:
                _fail("%s: \"layers\"[%d].block must be a block kind's name, one of %s (or no \"block\": the one of "
                      "the norm)", src, idx, ", ".join(sorted(BLOCK_KINDS)))
            layer["block"] = v
            continue
        if k not in keys:
            _fail("%s: \"layers\"[%d]: mixer \"%s\" has no key \"%s\"; its keys are: %s", src, idx, name, k,
                  ", ".join(keys) or "(none)")
        layer[k] = check_value(keys[k], v, src, "layers[%d].%s" % (idx, k))
    return layer


def _parse_layers(obj, n_layer, src, stack=False):
    """The layers of a "layers" list or a "mixers" list of obj (the config, or a stack)."""
    layers, mixers = obj.get("layers"), obj.get("mixers")
    if layers is not None and mixers is not None:
        _fail("%s: %s either \"layers\" or \"mixers\", not both", src, "a stack gives" if stack else "give")
    if mixers is not None:
        if not isinstance(mixers, list) or not mixers:
            _fail("%s: \"mixers\" must be a non-empty list of mixer names, e.g. [\"grassmann\"]", src)
        _fits_layers(mixers, n_layer, src, "mixers")
        out = []
        for l in range(n_layer):
            shown = "\"mixers\"[%d]" % (l if len(mixers) == n_layer else 0)
            m = _entry_for(mixers, l, n_layer)
            if not isinstance(m, str):
                _fail("%s: %s must be a mixer name", src, shown)
            out.append(_new_layer(m, src, shown))
        return out
    if not isinstance(layers, list) or not layers:
        _fail("%s: %s", src, "a stack needs \"layers\": one entry per layer (or one for all)" if stack else
              "\"layers\" must be a non-empty list with one entry per layer (or one for all)")
    _fits_layers(layers, n_layer, src, "layers")
    return [_parse_entry(_entry_for(layers, l, n_layer), l if len(layers) == n_layer else 0, src) for l in range(n_layer)]


def _broadcast(cfg, key, layers, lenient, src):
    """A mixer key given at the top level: into every layer (of the first stack) whose mixer has it."""
    for i, e in enumerate(cfg.get("layers") if isinstance(cfg.get("layers"), list) else []):
        if isinstance(e, dict) and key in e:
            _fail("%s: \"%s\" is given both at the top level and in \"layers\"[%d]; give it in one place", src, key, i)
    v, owner = cfg[key], _mixer_with_key(key)
    per_layer = isinstance(v, list) and (MIXER_KEYS[owner][key].kind != "ints" or (v and isinstance(v[0], list)))
    if per_layer:
        _fits_layers(v, len(layers), src, key)
    applied = 0
    for l, layer in enumerate(layers):
        spec = MIXER_KEYS[layer["mixer"]].get(key)
        if spec is None:
            continue
        shown = "%s[%d]" % (key, l if len(v) == len(layers) else 0) if per_layer else key
        layer[key] = check_value(spec, _entry_for(v, l, len(layers)) if per_layer else v, src, shown)
        applied += 1
    if not applied and not lenient:
        _fail("%s: no layer of this model has a mixer with key \"%s\" (mixer \"%s\" has it)", src, key, owner)


def _stack_name(e, k, src):
    name = e.get("name")
    if not isinstance(name, str):
        _fail("%s: \"stacks\"[%d] needs a \"name\" (a string of a-z, 0-9, _): it prefixes the stack's tensors", src, k)
    if not 1 <= len(name) <= 31 or any(not (c.isascii() and (c.islower() or c.isdigit() or c == "_")) for c in name):
        _fail("%s: \"stacks\"[%d] needs a \"name\" of 1 to 31 characters a-z, 0-9, _: it prefixes the stack's tensors",
              src, k)
    if name in RESERVED_NAMES:
        _fail("%s: \"stacks\"[%d] is named \"%s\", a name the model's own tensors use (%s): its tensors would be taken "
              "for those\nHINT: name it otherwise, e.g. \"head\"", src, k, name, ", ".join(RESERVED_NAMES))
    return name


def _parse_stacks(cfg, c, src):
    arr = cfg.get("stacks", [])
    if not isinstance(arr, list) or len(arr) > MAX_STACKS:
        _fail("%s: \"stacks\" must be a list of at most %d stacks (after the top-level one)", src, MAX_STACKS)
    stacks, total = [], c["n_layer"]
    for k, e in enumerate(arr):
        if not isinstance(e, dict):
            _fail("%s: \"stacks\"[%d] must be an object", src, k)
        st = {"name": _stack_name(e, k, src), "norm": c["norm"], "direction": c["direction"]}
        for key, v in e.items():
            if key in STACK_KEYS:
                st[key] = check_value(STACK_KEYS[key], v, src, "stacks[%d].%s" % (k, key))
            elif key not in ("name", "layers", "mixers"):
                _fail("%s: \"stacks\"[%d] has no key \"%s\"; its keys are: name, d_model, d_ff, n_layer, norm, "
                      "direction, layers", src, k, key)
        for key in ("d_model", "d_ff", "n_layer"):
            if key not in e:
                _fail("%s: \"stacks\"[%d] lacks \"%s\"", src, k, key)
        total += st["n_layer"]
        if total > MAX_LAYERS:
            _fail("%s: the stacks hold more than %d layers in all", src, MAX_LAYERS)
        if any(s["name"] == st["name"] for s in stacks):
            _fail("%s: two stacks are called \"%s\"", src, st["name"])
        st["layers"] = _parse_layers(e, st["n_layer"], src, stack=True)
        stacks.append(st)
    return stacks


def _check_layer(c, st, layer, l, src):
    """The checks of the layer's mixer (src/mixers/*.c: g_check, gf_attn_check, l_check, w_check, p_check, and
    gru.c's g_check)."""
    m, d = layer["mixer"], st["d_model"]
    if m in BIDIRECTIONAL_ONLY and st["direction"] != "bidirectional":
        _fail("%s: layer %d: mixer \"%s\" cannot run causally: it is bidirectional only (each of its outputs mixes in "
              "later positions, so in a causal model the past would see the future)", src, l, m)
    if m == "grassmann":
        r, H = layer["rank"], layer["heads"]
        if r > d:
            _fail("%s: layer %d: rank is %d; expected 2 <= rank <= min(256, d_model = %d)", src, l, r, d)
        if r % H or r // H < 2:
            _fail("%s: layer %d: rank %d in %d heads; expected rank divisible by heads, with at least 2 dimensions per "
                  "head", src, l, r, H)
        if not layer["plucker"] and H != 1:
            _fail("%s: layer %d: heads is %d with plucker false; heads split the Pluecker coordinates, which plucker "
                  "false does not compute: set heads 1 or plucker true", src, l, H)
        if layer["gate_form"] == "scalar" and not layer["gate"]:
            _fail("%s: layer %d: gate_form scalar with gate false; there is no gate to shape", src, l)
        if layer["offset_mix"] != "mean" and not layer["plucker"]:
            _fail("%s: layer %d: offset_mix %s with plucker false; the learned mixture weighs Pluecker terms",
                  src, l, layer["offset_mix"])
        if layer["conv"] and st["direction"] != "causal":
            _fail("%s: layer %d: conv %d in a bidirectional layer; the convolution is causal", src, l, layer["conv"])
        return
    if m == "gru-attn" and st["direction"] != "causal":
        _fail("%s: layer %d: mixer \"gru-attn\" is a causal decoder", src, l)
    if m in ("gru", "gru-attn"):
        if st["direction"] == "bidirectional" and d % 2:
            _fail("%s: layer %d: a bidirectional gru needs an even width (d / 2 units each way), not %d", src, l, d)
        return
    if m == "token-mlp":
        if c["pos"] != "learned":
            _fail("%s: layer %d: mixer \"token-mlp\" needs pos \"learned\": its weights have one column per position "
                  "up to max_len, and only learned positions hold every sequence to max_len", src, l)
        return
    if d % layer["n_head"]:
        _fail("%s: layer %d: d_model %d is not divisible by n_head %d", src, l, d, layer["n_head"])
    if m == "fixed-mix" and layer["span"] > c["max_len"]:
        _fail("%s: layer %d: mixer \"fixed-mix\": span %d is more than max_len %d (rel has one weight per offset up to "
              "the span)", src, l, layer["span"], c["max_len"])
    if m == "linformer" and c["pos"] != "learned":
        _fail("%s: layer %d: mixer \"linformer\" needs pos \"learned\": its E and F have one column per position up "
              "to max_len, and only learned positions hold every sequence to max_len", src, l)
    if m == "linformer" and layer["k_proj"] > c["max_len"]:
        _fail("%s: layer %d: linformer's k_proj %d is above max_len %d: E and F (k_proj, max_len) would project a "
              "sequence onto more rows than it can have positions", src, l, layer["k_proj"], c["max_len"])
    if m == "window" and 0 < c["max_len"] <= layer["n_global"]:
        _fail("%s: layer %d: n_global %d is not below max_len %d: the global positions must leave room for the "
              "others", src, l, layer["n_global"], c["max_len"])
    H, F = layer["n_head"], layer.get("features", 0)
    if m == "performer" and H * F * (d // H + 1) > 1 << 24:
        _fail("%s: layer %d: performer with features %d, n_head %d and d_model %d keeps n_head x features x (d_model / "
              "n_head + 1) = %d floats of running sums per layer; at most %d (64 MiB) are allowed", src, l, F, H, d,
              H * F * (d // H + 1), 1 << 24)


def _validate_encdec(c, src):
    """An encoder-decoder's keys against the rest (gf_encdec_validate, src/config/stacks.c)."""
    if c["source_vocab"] == 0:
        if c["cross_heads"] != 0:
            _fail("%s: cross_heads is %d, but this is not an encoder-decoder (source_vocab 0): only a decoder's blocks "
                  "attend to an encoder\nHINT: set source_vocab, or leave cross_heads out", src, c["cross_heads"])
        return
    st = c["stacks"]
    why = ("it has exactly one stack after the first (its decoder, in \"stacks\")" if len(st) != 1
           else "its input is tokens (source and target ids)" if c["input"] != "tokens"
           else "it has no token types (segments 0)" if c["segments"] > 0
           else "it has no emb_norm" if c["emb_norm"]
           else "its decoder (the second stack) is as wide as its encoder" if st[0]["d_model"] != c["d_model"]
           else "its decoder (the second stack) is causal" if st[0]["direction"] != "causal" else None)
    if why:
        _fail("%s: source_vocab %d makes an encoder-decoder, and one needs that %s (docs/model.md, "
              "\"Encoder-decoders\")", src, c["source_vocab"], why)
    if c["cross_heads"] < 1 or c["d_model"] % c["cross_heads"]:
        _fail("%s: cross_heads is %d; an encoder-decoder's decoder attends to the encoder with cross_heads heads, at "
              "least 1 and dividing d_model %d", src, c["cross_heads"], c["d_model"])


def _validate(c, src):
    """The checks across keys (gf_config_validate, the heads' and the mixers' checks)."""
    if c["pos"] == "learned" and c["max_len"] < 1:
        _fail("%s: max_len is %d; learned positions need max_len >= 1 (the table's rows)", src, c["max_len"])
    if c["pos"] == "sinusoidal-2d" and (c["pos_grid"] < 1 or c["d_model"] % 4):
        _fail("%s: pos \"sinusoidal-2d\" with pos_grid %d and d_model %d; it needs pos_grid >= 1 (the grid's "
              "columns) and d_model divisible by 4 (sines and cosines for the row and the column)", src, c["pos_grid"],
              c["d_model"])
    if c["input"] == "tokens" and c["vocab_size"] < 1:
        _fail("%s: vocab_size is %d; a model with token inputs needs vocab_size >= 1 (missing key \"vocab_size\"?)",
              src, c["vocab_size"])
    if c["input"] == "vectors" and c["d_input"] < 1:
        _fail("%s: input is \"vectors\" but d_input is %d; give the vectors' size", src, c["d_input"])
    if c["input"] == "vectors" and c["segments"] > 0:
        _fail("%s: segments is %d but input is \"vectors\"; token types are added to token embeddings", src,
              c["segments"])
    kind, out_dim = c["head_kind"], (c["stacks"][-1]["d_model"] if c["stacks"] else c["d_model"])
    if kind == "classify" and c["head"]["pool"] == "pair" and c["segments"] != 2:
        _fail("%s: head.pool \"pair\" pools the two sentences of a pair (segments 0 and 1) and needs \"segments\": 2; "
              "segments is %d\nHINT: \"segments\": 2 (a sentence-pair task: snli), or head.pool mean", src,
              c["segments"])
    head_tensors = ["cls_head.weight", "cls_head.bias"] if kind == "classify" else [] if c["tie_head"] else ["lm_head.weight"]
    for k, st in enumerate(c["stacks"]):
        for t in head_tensors:
            if t.startswith(st["name"] + "."):
                _fail("%s: \"stacks\"[%d] is named \"%s\", as the %s head's tensor %s begins: its tensors would be taken "
                      "for the head's\nHINT: name it otherwise, e.g. \"head\"", src, k, st["name"], kind, t)
    if kind == "next_token":
        if c["input"] != "tokens":
            _fail("%s: task lm predicts tokens, so its input must be tokens (input \"tokens\")", src)
        if c["tie_head"] and out_dim != c["d_model"]:
            _fail("%s: tie_head reuses the token embedding (width %d) as the head, but the last stack is %d wide; set "
                  "tie_head false", src, c["d_model"], out_dim)
        if any(st["direction"] != "causal" for st in ([c] + c["stacks"])[1 if c["source_vocab"] else 0:]):
            _fail("%s: task next_token needs a causal model: with direction bidirectional position t would see the "
                  "token it predicts", src)
    _validate_encdec(c, src)
    l = 0
    for k, st in enumerate([c] + c["stacks"]):
        for layer in st["layers"]:
            dec, blk = bool(c["source_vocab"]) and k == 1, layer.get("block")
            if layer["mixer"] in MEMORY_MIXERS and not dec:
                _fail("%s: layer %d: mixer \"%s\" reads an encoder's output; only an encoder-decoder's decoder layers "
                      "(its second stack) have one", src, l, layer["mixer"])
            if layer["mixer"] == "emb-qk" and (c["source_vocab"] or k):
                _fail("%s: layer %d: mixer \"emb-qk\" reads the model's input embeddings, which only the layers of the "
                      "first stack of a model that is not an encoder-decoder have", src, l)
            if blk and (blk in CROSS_KINDS) != dec and layer["mixer"] not in MEMORY_MIXERS:
                _fail("%s: layer %d: block kind \"%s\" %s\nHINT: leave \"block\" out for the default kind", src, l, blk,
                      "has no cross op; an encoder-decoder's decoder layers attend to its encoder" if dec
                      else "attends to an encoder (a cross op); only an encoder-decoder's decoder layers have one")
            _check_layer(c, st, layer, l, src)
            l += 1


def normalize(cfg, src="config"):
    """cfg (a config of format 1, 2 or 3, as json.loads gives it) checked as the library checks it, with every key
    (module docstring); ValueError names what is wrong as the library does."""
    if not isinstance(cfg, dict):
        _fail("%s: a config must be a JSON object", src)
    fmt = _format(cfg, src)
    _known_keys(cfg, src)
    _required(cfg, fmt, src)
    c = dict(MODEL_DEFAULTS)
    for k, spec in MODEL_KEYS.items():
        if k in cfg:
            c[k] = check_value(spec, cfg[k], src, k)
    c["format"] = fmt
    c["head_kind"], c["head"] = _head(cfg, src)
    c["task"] = "lm" if c["head_kind"] == "next_token" else c["head_kind"]
    if "direction" not in cfg:
        c["direction"] = HEAD_DIRECTION[c["head_kind"]]
    c["layers"] = _parse_layers(cfg, c["n_layer"], src)
    for k in cfg:
        if k not in MODEL_KEYS and k not in STRUCTURE_KEYS:
            _broadcast(cfg, k, c["layers"], fmt == 1, src)
    c["stacks"] = _parse_stacks(cfg, c, src)
    for st in c["stacks"]:  # what a stack's layers read of the model's
        for k in ("gelu", "dropout", "max_len", "pos"):
            st[k] = c[k]
    _validate(c, src)
    return c

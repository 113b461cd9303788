"""Write the hostile inputs of tests/trust/hostile.sh into DIR, and print one case per line:
    name <TAB> what the input is <TAB> grassflow arguments (FILE = the input) <TAB> regex stderr must match
from a good checkpoint GOOD (grassflow init) and a good training state STATE (grassflow train)."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "parity", "torch_ref"))
import st_io  # noqa: E402

out, good, state = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(good, "rb").read()
hl = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + hl])
data = raw[8 + hl:]
cases = []


def put(name, blob):
    p = os.path.join(out, name)
    open(p, "wb").write(blob)
    return p


def forge(name, hdr, body=data, what="", expect=""):
    h = json.dumps(hdr).encode()
    p = put(name + ".safetensors", struct.pack("<Q", len(h)) + h + body)
    cases.append((name, what, "score --ckpt %s --tokens TOKENS" % p, expect))


def edit(fn):
    h = json.loads(json.dumps(header))
    fn(h)
    return h


first = [k for k in header if k != "__metadata__"][0]
cfg = json.loads(header["__metadata__"]["config"])

p = put("empty.safetensors", b"")
cases.append(("empty", "an empty file", "score --ckpt %s --tokens TOKENS" % p, "too short"))
p = put("huge_header.safetensors", struct.pack("<Q", 1 << 62) + raw[8:200])
cases.append(("header_length_forged", "header length 2^62 in a 200-byte file",
              "score --ckpt %s --tokens TOKENS" % p, "header length .* larger than the file"))
p = put("truncated.safetensors", raw[: len(raw) // 2])
cases.append(("truncated", "the first half of a checkpoint", "score --ckpt %s --tokens TOKENS" % p, "truncated|data|bytes"))
bad_json = b'{"a": [1, 2'
p = put("bad_json.safetensors", struct.pack("<Q", len(bad_json)) + bad_json)
cases.append(("malformed_json", "a header that is not JSON", "score --ckpt %s --tokens TOKENS" % p, "JSON"))
forge("unknown_dtype", edit(lambda h: h[first].update(dtype="F17")), what="a tensor of dtype F17", expect="dtype")
forge("offsets_out_of_bounds", edit(lambda h: h[first].update(data_offsets=[0, len(data) + 4096])),
      what="data offsets past the end of the file", expect="offset|bounds|past")
def overlap(h):
    ks = [k for k in h if k != "__metadata__"]
    h[ks[1]]["data_offsets"] = h[ks[0]]["data_offsets"]
forge("overlapping", edit(overlap), what="two tensors on the same bytes", expect="overlap|gap|tile")
forge("shape_overflow", edit(lambda h: h[first].update(shape=[1 << 40, 1 << 40])),
      what="a shape whose element count overflows 64 bits", expect="shape|overflow|size")
def wrong_shape(h):
    s = h[first]["shape"]
    h[first]["shape"] = [s[1], s[0]] if len(s) == 2 and s[0] != s[1] else [s[0] * 2]
forge("shape_mismatch", edit(wrong_shape), what="a tensor transposed against the config", expect="should be F32 of shape|shape")
def drop(h):
    k = [k for k in h if k != "__metadata__"][-1]
    lo, hi = h[k]["data_offsets"]
    del h[k]
forge("missing_tensor", edit(drop), body=data, what="a tensor missing (its bytes left as a gap)", expect="missing|gap|tile")
def format1(c):
    """The same model's config in format 1 (grassflow 0.1: flat keys, all required)."""
    layers = c["layers"] if len(c["layers"]) == c["n_layer"] else c["layers"] * c["n_layer"]
    g = next((e for e in layers if e["mixer"] == "grassmann"), {})
    a = next((e for e in layers if e["mixer"] == "attention"), {})
    return {"vocab_size": c["vocab_size"], "d_model": c["d_model"], "n_layer": c["n_layer"],
            "n_head": a.get("n_head", 4), "d_ff": c["d_ff"], "max_len": c["max_len"], "rank": g.get("rank", 32),
            "offsets": [e.get("offsets", [1]) for e in layers], "mixers": [e["mixer"] for e in layers],
            "norm": c["norm"], "plucker_eps": g.get("plucker_eps", 1e-8), "extra_proj": g.get("extra_proj", False),
            "tie_head": c["tie_head"], "gelu": c["gelu"], "pos": c["pos"], "dropout": c["dropout"]}


def bad_cfg(key, val, fmt=2):
    c = dict(cfg) if fmt == 2 else format1(cfg)
    if val is None:
        del c[key]
    else:
        c[key] = val
    return edit(lambda h: h["__metadata__"].update(config=json.dumps(c)))
forge("config_missing_key", bad_cfg("rank", None, fmt=1), what="a format-1 config (0.1) without \"rank\"",
      expect="rank")
forge("config2_missing_key", bad_cfg("d_model", None), what="a format-2 config without \"d_model\"", expect="d_model")
forge("config_future_format", bad_cfg("format", 9), what="a config of a future format (9)", expect="format 9")
forge("config_unknown_mixer", bad_cfg("layers", [{"mixer": "mamba"}]), what="a layer with an unknown mixer",
      expect="mamba")
forge("config_negative", bad_cfg("d_model", -8), what="d_model = -8", expect="d_model")
forge("config_absurd", bad_cfg("vocab_size", 10 ** 12), what="vocab_size = 10^12", expect="vocab_size")
forge("config_wrong_type", bad_cfg("norm", 3), what="norm = 3 (a number)", expect="norm")
forge("config_unknown_key", bad_cfg("n_heads", 4), what="an unknown config key", expect="unknown key \"n_heads\"")
forge("no_config", edit(lambda h: h["__metadata__"].pop("config")), what="no config in the metadata", expect="config")
t, meta = st_io.read(good)
t[first] = t[first].copy()
t[first].flat[3] = float("nan")
p = os.path.join(out, "nan_weights.safetensors")
st_io.write(p, t, meta)
cases.append(("nan_weights", "a NaN among the weights", "score --ckpt %s --tokens TOKENS" % p, "NaN"))


# round four (issue 47): what the PyTorch loader let through, read by both loaders (tests/trust/hostile.sh runs each
# checkpoint case through grassflow.torch.load too)
def forge_raw(name, hdr, body=data, what="", expect=""):
    p = put(name + ".safetensors", struct.pack("<Q", len(hdr)) + hdr + body)
    cases.append((name, what, "score --ckpt %s --tokens TOKENS" % p, expect))


def meta_cfg(c):
    return edit(lambda h: h["__metadata__"].update(config=json.dumps(c)))


forge("shape_string", edit(lambda h: h[first].update(shape="65")), what="a shape that is a string (\"65\")",
      expect="\"shape\" \\(list\\)")
forge("shape_entry_string", edit(lambda h: h[first].update(shape=[str(x) for x in h[first]["shape"]])),
      what="shape entries that are strings", expect="shape entry 0 is not a size")
forge("shape_entry_bool", edit(lambda h: h[first].update(shape=[True] + h[first]["shape"][1:])),
      what="a shape entry true", expect="shape entry 0 is not a size")
forge("offsets_strings", edit(lambda h: h[first].update(data_offsets=[str(x) for x in h[first]["data_offsets"]])),
      what="data offsets that are strings", expect="data_offsets are not a range")
forge("entry_not_object", edit(lambda h: h.update({first: 7})), what="a tensor's entry that is a number",
      expect="needs \"dtype\"")
forge("metadata_list", edit(lambda h: h.update(__metadata__=[h["__metadata__"]["config"]])),
      what="__metadata__ a list", expect="__metadata__ must be an object of strings")
forge("metadata_config_object", edit(lambda h: h["__metadata__"].update(config=cfg)),
      what="the config an object in the metadata, not a string", expect="__metadata__\\[\"config\"\\] must be a string")
forge_raw("header_array", b"[1, 2]", b"", what="a header that is a JSON list", expect="not a JSON object")
forge_raw("header_deep", b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}", b"",
          what="a header nested 100,000 lists deep", expect="not a JSON object")
forge_raw("header_nan", b'{"__metadata__": {"config": "{}"}, "x": NaN}', b"", what="NaN in the header (not JSON)",
          expect="not a JSON object")
forge_raw("header_nul", b'{"__metadata__": {"config": "{}"}}\0   ', b"", what="a NUL byte in the header",
          expect="NUL byte")
twice = json.dumps(header).encode()
twice = twice[:-1] + b', "%s": %s}' % (first.encode(), json.dumps(header[first]).encode())
forge_raw("tensor_twice", twice, what="a tensor named twice in the header", expect="appears twice")
forge("config_nan", edit(lambda h: h["__metadata__"].update(config=h["__metadata__"]["config"].replace(
    '"dropout":0', '"dropout":NaN'))), what="NaN in the config (not JSON)", expect="not valid JSON")
forge("config_bool_int", meta_cfg(dict(cfg, n_layer=True)), what="n_layer = true", expect="\"n_layer\" must be an integer")
forge("config_float_int", meta_cfg(dict(cfg, n_layer=2.5)), what="n_layer = 2.5", expect="\"n_layer\" must be an integer")
forge("config_string_bool", meta_cfg(dict(cfg, tie_head="false")), what="tie_head = \"false\" (a string)",
      expect="\"tie_head\" must be true or false")
forge("config_layer_string_bool", meta_cfg(dict(cfg, layers=[dict(e, extra_proj="false") for e in cfg["layers"]])),
      what="a layer's extra_proj = \"false\" (a string)", expect="extra_proj\" must be true or false")
forge("config_eps_zero", meta_cfg(dict(cfg, layers=[dict(e, plucker_eps=0) for e in cfg["layers"]])),
      what="plucker_eps = 0", expect="plucker_eps\" is 0; expected a number in \\(0, 1e\\+30\\]")
forge("config_dropout", meta_cfg(dict(cfg, dropout=1.5)), what="dropout = 1.5", expect="\"dropout\" is 1.5")
forge("config_rank_257", meta_cfg(dict(cfg, layers=[dict(e, rank=257) for e in cfg["layers"]])),
      what="rank = 257", expect="rank\" is 257; expected an integer in \\[2, 256\\]")
forge("config_not_object", edit(lambda h: h["__metadata__"].update(config="[1, 2]")), what="a config that is a list",
      expect="a config must be a JSON object")
forge("config_5m_vocab", meta_cfg(dict(cfg, vocab_size=5000000, d_model=256)),
      what="a checkpoint of 73 KB whose config claims 5M x 256 embeddings", expect="should be F32 of shape \\(5000000, 256\\)")
t, meta = st_io.read(good)
t64 = dict(t, **{first: t[first].astype("float64")})
p = os.path.join(out, "f64_weight.safetensors")
st_io.write(p, t64, meta)
cases.append(("f64_weight", "a weight stored as F64", "score --ckpt %s --tokens TOKENS" % p,
              "should be F32 of shape .* but the file has another dtype"))
tinf = dict(t, **{first: t[first].copy()})
tinf[first].flat[7] = -float("inf")
p = os.path.join(out, "inf_weights.safetensors")
st_io.write(p, tinf, meta)
cases.append(("inf_weights", "an infinite weight", "score --ckpt %s --tokens TOKENS" % p, "holds an infinite value at index 7"))

# the training state
t, meta = st_io.read(state)


def state_case(name, tensors, metadata, what, expect):
    p = os.path.join(out, name)
    os.makedirs(p)
    st_io.write(os.path.join(p, "state.safetensors"), tensors, metadata)
    cases.append((name, what, "train --resume %s" % p, expect))


huge = json.loads(meta["train"])
huge["batch"] = 1e19
state_case("state_without_moments", {k: v for k, v in t.items() if not k.startswith("adam_m")}, meta,
           "a training state without its AdamW moments", "state.safetensors")
state_case("state_bad_step", t, dict(meta, step="-5"), "a training state whose step is -5", "step")
state_case("state_bad_recipe", t, dict(meta, train="{\"batch\": \"many\"}"), "a training state with a broken recipe",
           "recipe")
state_case("state_huge_batch", t, dict(meta, train=json.dumps(huge)),
           "a training state whose recipe says batch = 1e19 (found by fuzz_meta)", "batch")

# int8 checkpoints (grassflow quantize): a header that lies about them, scales of the wrong shape, bad codes
if len(sys.argv) > 4:
    import numpy as np
    q8, qmeta = st_io.read(sys.argv[4])
    mat = next(k for k in q8 if q8[k].dtype == np.int8)
    bias = next(k for k in q8 if k.endswith(".bias"))

    def q8_case(name, tensors, metadata, what, expect):
        p = os.path.join(out, name + ".safetensors")
        st_io.write(p, tensors, metadata)
        cases.append((name, what, "score --ckpt %s --tokens TOKENS" % p, expect))

    def with_(**kw):
        t = dict(q8)
        t.update(kw)
        return t
    q8_case("int8_unsaid", q8, {k: v for k, v in qmeta.items() if k != "weights"},
            "int8 matrices in a file whose metadata does not say int8", "does not say its weights are int8")
    q8_case("int8_said_bf16", q8, dict(qmeta, weights="bf16"), "I8 matrices in a file that says bf16",
            "is I8, but the file says its weights are bf16")
    q8_case("int8_kind_int4", q8, dict(qmeta, weights="int4"), "a file that says its weights are int4",
            "expected fp32, bf16 or int8")
    rows = q8[mat].shape[0]
    q8_case("int8_scale_shape", with_(**{mat + ".scale": np.ones(rows + 1, np.float32)}), qmeta,
            "an int8 matrix with one scale too many", "should be F32 of shape \\(%d\\), one per row" % rows)
    q8_case("int8_scale_missing", {k: v for k, v in q8.items() if k != mat + ".scale"}, qmeta,
            "an int8 matrix without its scales", "its scales .* the file has none")
    sc = q8[mat + ".scale"].copy()
    sc[1] = float("nan")
    q8_case("int8_scale_nan", with_(**{mat + ".scale": sc}), qmeta, "a NaN scale", "scales are finite and >= 0")
    big = q8[mat + ".scale"].copy()
    big[2] = 1e38  # finite, but 127 * 1e38 is not (it scored "loss null", exit 0)
    q8_case("int8_scale_1e38", with_(**{mat + ".scale": big}), qmeta,
            "a finite scale of 1e38, whose weights overflow float32", "row 2 has scale 1e\\+38: .* past float32's largest")
    q8_case("int8_scale_one", with_(**{mat + ".scale": q8[mat + ".scale"][:1].copy()}), qmeta,
            "an int8 matrix with one scale for all its rows (shape [1])", "should be F32 of shape \\(%d\\), one per row" % rows)
    sc = q8[mat + ".scale"].copy()
    sc[2] = -sc[2] - 1
    q8_case("int8_scale_negative", with_(**{mat + ".scale": sc}), qmeta, "a negative scale", "row 2 has scale -")
    q8_case("int8_scale_f64", with_(**{mat + ".scale": q8[mat + ".scale"].astype("float64")}), qmeta,
            "int8 scales stored as F64", "should be F32 of shape")
    pos = "pos_emb.weight"
    if pos in q8:
        pq = (q8[pos] * 0).astype(np.int8)
        q8_case("int8_pos_emb", with_(**{pos: pq, pos + ".scale": np.ones(pq.shape[0], np.float32)}), qmeta,
                "the position table stored as I8 (not a weight matrix)", "only the weight matrices")
    bf, bmeta = dict(q8), dict(qmeta, weights="bf16")
    for k in [k for k in bf if bf[k].dtype == np.int8]:
        bf[k] = (bf[k].astype(np.float32) * bf.pop(k + ".scale")[:, None]).view(np.uint32).__rshift__(16).astype(np.uint16)
    bf[mat] = bf[mat].copy()
    bf[mat].flat[4] = 0x7fc0  # a NaN's upper half
    q8_case("bf16_nan", bf, bmeta, "a NaN in a bf16 weight", "holds NaN at index 4")
    codes = q8[mat].copy()
    codes.flat[5] = -128
    q8_case("int8_code_-128", with_(**{mat: codes}), qmeta, "the int8 code -128", "code -128")
    q8_case("int8_bias", with_(**{bias: np.zeros(q8[bias].shape, np.int8)}), qmeta, "a bias stored as I8",
            "not a matrix")
    f32 = {k: (v.astype(np.float32) * 0.01 if k == mat else v) for k, v in q8.items() if k != mat + ".scale"}
    q8_case("int8_f32_matrix", f32, qmeta, "an int8 file with one weight matrix left F32", "is F32")

# vocabulary files (WordPiece)
def vocab(name, blob, what, expect):
    p = put(name + ".txt", blob)
    cases.append((name, what, "data stats --corpus tinyshakespeare --tokenizer wordpiece:%s" % p, expect))
vocab("vocab_empty", b"", "an empty vocabulary file", "vocab_empty.txt")
vocab("vocab_no_unk", b"[PAD]\nthe\n##s\n", "a vocabulary without [UNK]", "UNK")
vocab("vocab_duplicates", b"[UNK]\nthe\nthe\n", "a vocabulary with a duplicate entry", "duplicate|twice|line 3")
vocab("vocab_bad_utf8", b"[UNK]\nthe\n\xff\xfe\n", "invalid UTF-8 on line 3", "UTF-8|line 3")

# corpora
def corpus(name, blob, tok, what, expect):
    p = put(name + ".txt", blob)
    cases.append((name, what, "data stats --corpus %s --tokenizer %s" % (p, tok), expect))
corpus("corpus_empty", b"", "char", "an empty corpus file", "corpus_empty.txt")
corpus("corpus_bad_utf8", b"hello\nwor\xffld\n" * 50, "char", "invalid UTF-8 (char tokenizer)", "UTF-8")
corpus("corpus_nul", b"abc\x00def\n" * 50, "char", "NUL bytes in the text", "NUL|corpus_nul.txt")

# config files
def config(name, obj, what, expect):
    p = put(name + ".json", obj.encode() if isinstance(obj, str) else json.dumps(obj).encode())
    cases.append((name, what, "info --config %s" % p, expect))
config("cfgfile_missing", {"d_model": 64}, "a config file with missing keys", "missing|vocab_size|n_layer")
config("cfgfile_negative", dict(cfg, n_layer=-1), "n_layer = -1", "n_layer")
config("cfgfile_absurd", dict(cfg, d_model=1 << 40), "d_model = 2^40", "d_model")
config("cfgfile_not_json", "{\"d_model\": ", "a truncated JSON file", "JSON")
config("cfgfile_offsets", dict(cfg, offsets=[[0, -3]]), "offsets 0 and -3", "offsets")

# special files where a regular one is expected: a FIFO must not block, a directory must not be read
fifo = os.path.join(out, "fifo")
os.mkfifo(fifo)
adir = os.path.join(out, "a_directory")
os.makedirs(adir)
special = [
    ("fifo_ckpt", "a FIFO as --ckpt (score)", "score --ckpt %s --tokens TOKENS" % fifo, "FIFO"),
    ("fifo_ckpt_generate", "a FIFO as --ckpt (generate)", "generate --ckpt %s --tokens 2" % fifo, "FIFO"),
    ("fifo_ckpt_eval", "a FIFO as --ckpt (eval)", "eval --ckpt %s --corpus tinyshakespeare" % fifo, "FIFO"),
    ("fifo_tokens", "a FIFO as --tokens", "score --ckpt %s --tokens %s" % (good, fifo), "FIFO"),
    ("fifo_config", "a FIFO as --config", "info --config %s" % fifo, "FIFO"),
    ("fifo_vocab", "a FIFO as a WordPiece vocabulary",
     "data stats --corpus tinyshakespeare --tokenizer wordpiece:%s" % fifo, "FIFO"),
    ("dir_ckpt", "a directory as --ckpt", "score --ckpt %s --tokens TOKENS" % adir, "is a directory"),
    ("dir_config", "a directory as --config", "info --config %s" % adir, "is a directory"),
]
cases.extend(special)

for c in cases:
    print("\t".join(c))

"""A grassflow checkpoint read for PyTorch with the C loader's checks and messages (src/model/checkpoint.c,
src/model/checkpoint_lowp.c, src/io/safetensors.c): the file's format (grassflow.st_io.read), its config
(grassflow.config_schema), then every tensor against what the config's model holds, all before the model is
built, so a small forged file cannot make the loader allocate what its config claims; then the values
(finite weights, int8 codes and scales, bf16 values), as the float32 arrays the module loads.
"""
import collections
import json

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from . import st_io
from .torch_model import GrassflowModel

# int8 and bf16 checkpoints (grassflow quantize; docs/precision.md): only the weight matrices are low-precision
KINDS = ("fp32", "bf16", "int8")
CORRUPT = "the checkpoint is corrupt (or was saved from a diverged run)\nHINT: use an earlier checkpoint"


class _OnMeta(TorchFunctionMode):
    """Tensors made without a device go to the meta device: shapes without memory."""
    FACTORIES = (torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in self.FACTORIES and kwargs.get("device") is None:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


Planned = collections.namedtuple("Planned", "shape eligible")


def plan(cfg, src="config"):
    """{name: Planned(shape, eligible)} of every tensor a checkpoint of cfg holds, in the checkpoint's order,
    without allocating them (the model built on the meta device). eligible: a weight matrix that an int8 or
    bf16 file stores low-precision (gf_weights_eligible: a 2-D parameter but pos_emb and seg_emb)."""
    with _OnMeta():
        model = GrassflowModel(cfg, src)
    params = dict(model.named_parameters())
    return {k: Planned(tuple(v.shape), k in params and v.dim() == 2 and not k.startswith(("pos_emb.", "seg_emb.")))
            for k, v in model.state_dict().items()}


def parse_config(text, src):
    """The config JSON of the metadata, read as cJSON reads it: no NaN or Infinity, no key given twice."""
    def pairs(items):
        names = [k for k, _ in items]
        twice = next((k for k in names if names.count(k) > 1), None)
        if twice is not None:
            raise ValueError("%s: key \"%s\" is given twice in one object" % (src, twice))
        return dict(items)

    def constant(name):
        raise ValueError("%s is not JSON" % name)
    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise ValueError("%s: not valid JSON (error near byte %d)" % (src, e.pos)) from None
    except RecursionError:
        raise ValueError("%s: not valid JSON (nested too deeply)" % src) from None
    except ValueError as e:
        if str(e).startswith(src):  # a key given twice
            raise
        raise ValueError("%s: not valid JSON (%s)" % (src, e)) from None


def _shape_text(shape):
    return "(%s)" % ", ".join(str(int(x)) for x in shape[:4])


def _check_lowp(path, kind, name, want, t, tensors):
    """An I8 or BF16 tensor (gf_lowp_check_tensor); the name of its scales, for an int8 one."""
    dt = st_io.dtype_name(t)
    if kind == "fp32":
        raise ValueError("%s: tensor \"%s\" is %s, but the file does not say its weights are int8 or bf16 (no "
                         "__metadata__[\"weights\"])" % (path, name, dt))
    if (kind == "int8") != (dt == "I8"):
        raise ValueError("%s: tensor \"%s\" is %s, but the file says its weights are %s" % (path, name, dt, kind))
    if len(want) != 2 or t.ndim != 2 or tuple(t.shape) != tuple(want):
        raise ValueError("%s: tensor \"%s\" is %s of %d dimensions; for this config it is %s (only weight matrices "
                         "can be %s)" % (path, name, dt, t.ndim, "a matrix of another shape" if len(want) == 2
                                         else "not a matrix", dt))
    if kind != "int8":
        return None
    sname = name + ".scale"
    sc = tensors.get(sname)
    if sc is None or st_io.dtype_name(sc) != "F32" or sc.ndim != 1 or sc.shape[0] != want[0]:
        raise ValueError("%s: tensor \"%s\" is I8, and its scales \"%s\" should be F32 of shape (%d), one per row; the "
                         "file has %s" % (path, name, sname, want[0], "another dtype or shape" if sc is not None else "none"))
    return sname


def check_file(path, tensors, meta, planned):
    """The file holds exactly the planned tensors, each F32 of its shape (or I8 with its scales, or BF16, in a
    file that says so): check_file and check_tensor of src/model/checkpoint.c. Returns the file's weights kind."""
    if "adam_m" in tensors and "params" in tensors and "tok_emb.weight" not in tensors:
        raise ValueError("%s is a training state (weights and optimizer moments for --resume), not a checkpoint\nHINT: "
                         "give the run's last.safetensors or best.safetensors" % path)
    kind = meta.get("weights", "fp32")
    if kind not in KINDS:
        raise ValueError("%s: __metadata__[\"weights\"] is \"%.40s\"; expected fp32, bf16 or int8" % (path, kind))
    seen = set()
    for name, p in planned.items():
        t = tensors.get(name)
        if t is None:
            raise ValueError("%s: tensor \"%s\" is missing (the config in the file says the model has it)" % (path, name))
        seen.add(name)
        dt = st_io.dtype_name(t)
        if dt in ("I8", "BF16"):
            seen.add(_check_lowp(path, kind, name, p.shape, t, tensors))
        elif dt != "F32" or tuple(t.shape) != p.shape:
            raise ValueError("%s: tensor \"%s\" should be F32 of shape %s for this config, but the file has %s of shape "
                             "%s" % (path, name, _shape_text(p.shape), "F32" if dt == "F32" else "another dtype",
                                     _shape_text(t.shape)))
    for name in tensors:
        if name not in seen:
            raise ValueError("%s: unexpected tensor \"%s\" that the config's model does not have" % (path, name))
    return kind


def _finite(path, name, x, why):
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        k = int(bad[0])
        raise ValueError("%s: tensor \"%s\" holds %s at index %d; %s" % (path, name, "NaN" if np.isnan(x.flat[k]) else
                                                                          "an infinite value", k, why))


def weights(path, tensors, kind, planned):
    """The float32 value of every planned tensor (load_tensors of src/model/checkpoint.c)."""
    out = {}
    for name, p in planned.items():
        t, dt = tensors[name], st_io.dtype_name(tensors[name])
        if dt in ("I8", "BF16") and not p.eligible:
            raise ValueError("%s: tensor \"%s\" is %s; only the weight matrices (gf_model_set_weights's) can be"
                             % (path, name, dt))
        if dt == "I8":
            out[name] = st_io.int8_values(path, name, t, tensors[name + ".scale"])
        elif dt == "BF16":
            out[name] = st_io.bf16_values(t)
            _finite(path, name, out[name], "the checkpoint is corrupt")
        else:
            _finite(path, name, t, CORRUPT)
            out[name] = t
    for name, p in planned.items():
        if kind != "fp32" and p.eligible and st_io.dtype_name(tensors[name]) == "F32":
            raise ValueError("%s: the file says its weights are %s, but the weight matrix \"%s\" is F32"
                             % (path, kind, name))
    return out


def read(path):
    """(config dict, {name: float32 numpy array} in the checkpoint's order, metadata) of a grassflow checkpoint;
    ValueError, in the C loader's words, for anything it refuses."""
    tensors, meta = st_io.read(path)
    if "config" not in meta:
        raise ValueError("%s: no __metadata__[\"config\"]; this is not a grassflow checkpoint\nHINT: checkpoints come "
                         "from `grassflow init` or `grassflow train`" % path)
    src = "%s (config in __metadata__)" % path
    cfg = parse_config(meta["config"], src)
    planned = plan(cfg, src)
    kind = check_file(path, tensors, meta, planned)
    return cfg, weights(path, tensors, kind, planned), meta

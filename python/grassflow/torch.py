"""grassflow checkpoints as PyTorch modules, to fine-tune in PyTorch and save back for the C engine.

    import torch, grassflow.torch as gt
    net = gt.load("runs/mine/best.safetensors")     # float32 nn.Module, in eval mode
    logits = net(torch.tensor([[3, 1, 4, 1, 5]]))   # (B, T) token ids -> (B, T, vocab_size)
    ...train it...
    gt.save(net, "tuned.safetensors")               # grassflow eval/generate read it

The module is tests' reference model (grassflow.torch_model, held to the C engine by tests/parity/parity.sh and
tests/parity/python.sh): forward(inputs, mask=None, segments=None) takes (B, T) int64 token ids (or (B, T,
d_input) floats for a model of input "vectors"), an optional (B, T) bool mask (True = a real position;
padding after the sequence) and optional (B, T) token types (a sentence pair: 0 for [CLS] premise [SEP],
1 for hypothesis [SEP]; grassflow.Model.encode_pair makes both), and returns a language model's (B, T,
vocab_size) next-token logits or a classifier's (B, n_classes) logits. Dropout follows train()/eval().
"""
import json
import os

import torch  # absolute: PyTorch, not this module

from . import st_io, torch_checkpoint
from .torch_model import GrassflowModel, load_state_strict

__all__ = ["load", "save", "GrassflowModel"]


def load(path, dtype=torch.float32):
    """The checkpoint at path (a grassflow safetensors file) as a GrassflowModel in eval mode, every tensor
    loaded. Its file's metadata (config, tokenizer, training recipe) is kept in .grassflow_metadata for
    save(). What the C loader refuses is a ValueError with its message, found before the model is built (the
    file's format, its config, every tensor's name, dtype and shape, then the values: NaN or infinite weights,
    int8 codes and scales); so is what the module cannot represent."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError("%s is a directory; grassflow.torch.load reads a grassflow checkpoint (.safetensors)\nHINT: "
                         "a Hugging Face folder: grassflow.load(path) reads it, or save it from PyTorch" % path)
    cfg, tensors, meta = torch_checkpoint.read(path)  # an int8 or bf16 file: the F32 values its weights stand for
    model = GrassflowModel(cfg, "%s (config in __metadata__)" % path).to(dtype)
    load_state_strict(model, tensors)  # the names and shapes checked above
    model.grassflow_metadata = dict(meta)
    return model.eval()


def save(model, path, overwrite=False):
    """Write model's tensors as a grassflow checkpoint (F32, the names and order of docs/model.md, the
    metadata it was loaded with: config, tokenizer, training recipe; without: its config), atomically. An existing file is kept unless
    overwrite is true."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError("%s exists; save(..., overwrite=True) replaces it" % path)
    meta = {"format": "pt", "config": json.dumps(model.cfg_in)}
    # what it was loaded with, but the numbers of the run it came from (its step, its validation loss)
    meta.update({k: v for k, v in (getattr(model, "grassflow_metadata", None) or {}).items()
                 if k not in ("step", "val_loss", "weights", "weights_layout")})  # saved as F32
    meta["producer"] = "grassflow.torch"
    sd = model.state_dict()
    st_io.write(path, {k: v.detach().to("cpu", torch.float32).numpy() for k, v in sd.items()}, meta)

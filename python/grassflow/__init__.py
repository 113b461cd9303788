"""grassflow from Python: the C library (libgrassflow.so) through ctypes, standard library only.

    import grassflow
    m = grassflow.load("runs/mine/best.safetensors")
    m.score("To be, or not to be").ppl
    for piece in m.generate("ROMEO:", tokens=40, temperature=0.8, top_k=40, seed=1):
        print(piece, end="", flush=True)
    m.features("a text").hidden                       # (tokens, width): numpy if importable, else lists
    m.predict("A man sleeps.", "Nobody sleeps.")      # a sentence-pair classifier: label, probabilities

grassflow.torch.load(path) (PyTorch) builds the same model as a torch.nn.Module.
"""

# The C library loads on first use of one of these names, so that grassflow.torch (and the parity tests'
# reference model) import without it.
_CORE = ("load", "Model", "Tokenizer", "GrassflowError", "Score", "Features", "Prediction", "version",
         "set_threads", "library_path")
__all__ = list(_CORE)


def __getattr__(name):
    if name in _CORE:
        from . import core
        return getattr(core, name)
    raise AttributeError("module 'grassflow' has no attribute %r" % name)

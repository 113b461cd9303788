"""The C library's models from Python (grassflow.load and what it returns)."""
import collections
import contextlib
import ctypes
import functools
import json
import math
import os
import threading

from . import _lib
from ._lib import GrassflowError

try:
    import numpy as _np
except ImportError:  # lists instead
    _np = None

__all__ = ["load", "Model", "Tokenizer", "GrassflowError", "Score", "Features", "Prediction", "version",
           "set_threads", "library_path"]

Score = collections.namedtuple("Score", "tokens loss ppl total")
Score.__doc__ = """tokens predicted, their mean loss (nats), exp(loss), and the summed loss"""
Features = collections.namedtuple("Features", "ids pieces hidden")
Features.__doc__ = """token ids, their pieces (str), and the hidden states (tokens x width)"""
Prediction = collections.namedtuple("Prediction", "label index probs")
Prediction.__doc__ = """the label's name (its index if the task names none), its index, and every class's
probability (softmax of the logits)"""

library_path = _lib.path
_L = _lib.lib


def version():
    """The library's version string ("0.3.0")."""
    return _L.gf_version().decode()


def set_threads(n):
    """Threads the library computes with (OpenMP and BLAS), as the command's --threads: 1 to 1024."""
    _L.gf_set_threads(_lib.integer(n, "set_threads: n", 1, 1024))


def _rows(flat, rows, cols):
    """A (rows, cols) numpy array (a copy) or a list of lists of the float buffer `flat`."""
    if _np is not None:
        return _np.ctypeslib.as_array(flat, shape=(rows * cols,)).reshape(rows, cols).copy()
    return [[flat[r * cols + c] for c in range(cols)] for r in range(rows)]


def _locked(fn):
    """fn run holding its object's lock (a Model's, which its Tokenizer shares): the library's model holds the
    buffers of one forward pass, so calls on one model from several threads run one at a time, and close()
    waits for a call in another thread to return before it frees the model (issue 47: it freed the model under
    that call). The lock is reentrant: a method calls others."""
    @functools.wraps(fn)
    def locked(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)
    return locked


def _vocab_ids(ids, V, what):
    """ids as a list of ints, each in the vocabulary [0, V), else ValueError naming the first that is not."""
    out = [_lib.integer(i, "%s: ids[%d]" % (what, t)) for t, i in enumerate(ids)]
    bad = next((t for t, i in enumerate(out) if not 0 <= i < V), None)
    if bad is not None:
        raise ValueError("%s: token id %d at position %d is outside the vocabulary [0, %d)" % (what, out[bad], bad, V))
    return out


class Tokenizer:
    """A checkpoint's tokenizer (word, char, byte or WordPiece); owned by its Model."""

    def __init__(self, owner):
        self._owner = owner
        self._lock = owner._lock

    @property
    def _p(self):
        if not self._owner._tok:
            raise ValueError("the tokenizer's model is closed")
        return self._owner._tok

    @property
    @_locked
    def kind(self):
        return _L.gf_tok_kind_name(_L.gf_tokenizer_kind(self._p)).decode()

    @_locked
    def __len__(self):
        return _L.gf_tokenizer_vocab_size(self._p)

    @_locked
    def encode(self, text, prompt=False):
        """The token ids of text, a str or bytes (prompt=True: the ids a model continues text from, as generate
        takes them)."""
        raw = _lib.text_bytes(text, "encode: text")
        ids, n = _lib.P_i32(), _lib.c_i64()
        fn = _L.gf_tokenizer_encode_prompt if prompt else _L.gf_tokenizer_encode
        if fn(self._p, raw, len(raw), b"text", ctypes.byref(ids), ctypes.byref(n)):
            raise _lib.error()
        try:
            return ids[:n.value]
        finally:
            _lib.libc.free(ids)

    @_locked
    def decode(self, ids):
        """The text of token ids; an id outside the vocabulary is a ValueError."""
        arr, n = _lib.int32_array(_vocab_ids(ids, len(self), "decode"))
        size = _lib.c_sz()
        return _lib.take_string(_L.gf_tokenizer_decode(self._p, arr, n, ctypes.byref(size)),
                                size.value).decode("utf-8", "replace")

    @_locked
    def piece(self, i):
        """The text of token i (None outside the vocabulary)."""
        i = _lib.integer(i, "piece: id")
        if not 0 <= i < len(self):
            return None
        size = _lib.c_sz()
        p = _L.gf_tokenizer_piece(self._p, i, ctypes.byref(size))
        return ctypes.string_at(p, size.value).decode("utf-8", "replace") if p else None

    @_locked
    def find(self, piece):
        """The id of piece (a str or bytes), or -1."""
        raw = _lib.text_bytes(piece, "find: piece")
        return _L.gf_tokenizer_find(self._p, raw, len(raw))


def load(path):
    """A checkpoint (grassflow train / init), or a Hugging Face DistilBERT folder, as a Model."""
    return Model(path)


class Model:
    """A model loaded by the C library, with its tokenizer (None for a checkpoint of grassflow init) and
    its config (a dict, docs/model.md). Free it with close() or a `with` block (or leave it to the
    garbage collector)."""

    def __init__(self, path):
        self._lock = threading.RLock()  # held by every call into the library (_locked), and by close()
        p = _lib.path_bytes(path, "load: path")  # str, bytes or os.PathLike
        self.path = os.fsdecode(p)
        self._live = {}  # what outlives a call (generate's streams): key -> its C objects, freed before the model
        tok, train = _lib.c_p(), _lib.c_p()
        if _L.gf_import_detect(p):  # a folder of another tool's (Hugging Face DistilBERT)
            self._m = _L.gf_import_load(p, ctypes.byref(tok))
        else:
            self._m = _L.gf_checkpoint_load(p, ctypes.byref(tok), ctypes.byref(train))
        if not self._m:
            raise _lib.error("cannot load %s" % self.path)
        self._tok = tok.value
        self.tokenizer = Tokenizer(self) if self._tok else None
        recipe = _lib.take_string(train.value)
        self.recipe = json.loads(recipe) if recipe else None
        self.config = json.loads(_lib.take_string(_L.gf_config_to_json(_L.gf_model_config(self._m), False)))
        self.next_token = bool(_L.gf_model_predicts_next_token(self._m))
        self.n_outputs = _L.gf_model_n_outputs(self._m)
        self.num_params = _L.gf_model_num_params(self._m)
        _L.gf_model_set_training(self._m, False, 0, 0)

    def close(self):
        """Free the model and its tokenizer (their memory is the library's). What still reads them fails with
        ValueError from then on (the tokenizer, a generate iterator not run to its end). A call on the model in
        another thread is waited for: it returns its result, and the calls after it fail."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before anything was made
            return
        with lock:
            self._close()

    def _close(self):
        for key in list(getattr(self, "_live", ())):
            self._release(key)
        if getattr(self, "_m", None):
            m, tok, self._m, self._tok = self._m, self._tok, None, None
            _L.gf_tokenizer_free(tok)
            _L.gf_model_free(m)

    @_locked
    def _release(self, key):
        """Free the C objects registered under key (a generation's stream, sampler and detokenizer)."""
        objs = self._live.pop(key, None)
        if objs:
            s, smp, d = objs
            _L.gf_detok_free(d)
            _L.gf_sampler_free(smp)
            _L.gf_stream_free(s)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<grassflow.Model %s: %s, %d parameters>" % (self.path, self.config["head"]["kind"], self.num_params)

    def _need(self, what, next_token=None, tokenizer=False):
        if not self._m:
            raise ValueError("%s: the model is closed" % what)
        if next_token is True and not self.next_token:
            raise ValueError("%s: %s needs a language model (head next_token); this checkpoint's head is %s"
                             % (self.path, what, self.config["head"]["kind"]))
        if next_token is False and self.next_token:
            raise ValueError("%s: %s needs a classifier (head classify); this checkpoint is a language model"
                             % (self.path, what))
        if tokenizer and self.tokenizer is None:
            raise ValueError("%s has no tokenizer (it was not made by grassflow train), so %s cannot read text"
                             % (self.path, what))

    def _ids(self, text_or_ids, what):
        """Token ids of a text (through the tokenizer), or ids given: a list of ints in the vocabulary."""
        if isinstance(text_or_ids, (str, bytes)):
            self._need(what, tokenizer=True)
            return self.tokenizer.encode(text_or_ids)
        V = self.config.get("vocab_size", 0)
        if V > 0:
            return _vocab_ids(text_or_ids, V, what)
        arr, n = _lib.int32_array(text_or_ids, "%s: ids" % what)  # no vocabulary (vector inputs): the library says
        return arr[:n]

    def _segments(self, segments, n, what):
        """Token types, one per id, each one of the model's (0 only for a model without token types)."""
        if segments is None:
            return None
        segments = list(segments)
        if len(segments) != n:
            raise ValueError("%s: %d token types for %d ids; give one per id (0s, then 1s for a pair's second "
                             "sentence), or None" % (what, len(segments), n))
        types = max(1, self.config.get("segments", 0))
        for t, v in enumerate(segments):
            if _lib.integer(v, "%s: segments[%d]" % (what, t)) not in range(types):
                raise ValueError("%s: token type %d at position %d; this model has %d token type%s (0 .. %d)"
                                 % (what, v, t, types, "s" if types > 1 else "", types - 1))
        return (ctypes.c_uint8 * n)(*segments)

    # --- forward --------------------------------------------------------------------------------------
    def _forward(self, ids, segments=None, what="forward"):
        """One forward pass of one sequence (token ids; token types or None); returns the number of ids."""
        self._need(what)
        arr, n = _lib.int32_array(ids, "%s: ids" % what)
        if n == 0:
            raise ValueError("%s: no token ids" % what)
        seg = self._segments(segments, n, what)
        b = _lib.Batch(B=1, T=n, ids=arr, segments=ctypes.cast(seg, _lib.P_u8) if seg is not None else None)
        if _L.gf_model_forward_batch(self._m, ctypes.byref(b), None):
            raise _lib.error()
        return n

    @_locked
    def logits(self, ids, segments=None):
        """The head's outputs for one sequence of token ids (or a text, through the tokenizer): a language
        model's (tokens, vocab_size) next-token logits; a classifier's (n_classes,) logits. segments: token
        types (a sentence pair: 0s then 1s) or None."""
        self._need("logits")
        ids = self._ids(ids, "logits")
        n = self._forward(ids, segments, "logits")
        out = _L.gf_model_logits(self._m)
        rows = _rows(out, n if self.next_token else 1, self.n_outputs)
        return rows if self.next_token else rows[0]

    @_locked
    def hidden(self, ids, segments=None, stack=None):
        """The last stack's output before the final LayerNorm (what `grassflow features` prints), or stack
        k's (0: the first), for one sequence: (tokens, width)."""
        self._need("hidden")
        last = len(self.config.get("stacks", []))
        k = last if stack is None else _lib.integer(stack, "hidden: stack")
        if not 0 <= k <= last:
            raise ValueError("%s has no stack %d: it has %d (0 .. %d)" % (self.path, k, last + 1, last))
        ids = self._ids(ids, "hidden")
        self._forward(ids, segments, "hidden")
        B, T, W = _lib.c_i64(), _lib.c_i64(), _lib.c_i64()
        out = _L.gf_model_stack_output(self._m, k, ctypes.byref(B), ctypes.byref(T), ctypes.byref(W))
        if not out:
            raise _lib.error("%s: no output of stack %d" % (self.path, k))
        return _rows(out, T.value, W.value)

    def decode(self, source, beam=1, length_penalty=0.0, max_len=0, bos=0, eos=0, ensemble=()):
        """An encoder-decoder's best target for source (a list of source ids in [0, source_vocab)): greedy
        (beam 1) or beam search of up to 256 hypotheses (GF_DECODE_MAX_BEAM) with GNMT's length penalty
        (grassflow.h, "Decoding an encoder-decoder").
        Returns (ids, score): the target ids without the end token, and the hypothesis's log-probability
        divided by the penalty. bos: the decoder's first input; eos: the token that ends a target; max_len 0:
        the model's own limit (its max_len with learned positions, else 256). ensemble: more Models
        (encoder-decoders of the same source and target vocabularies) that decode with this one as one model,
        each token's probability the mean of theirs (gf_ensemble_decode; max_len 0: the smallest limit; an error
        about one names it as the ensemble's model k: this one is 0, ensemble[k - 1] is k). A lone Model is an
        ensemble of one more."""
        models = [self, *([ensemble] if isinstance(ensemble, Model) else ensemble)]
        for k, o in enumerate(models[1:]):
            if not isinstance(o, Model):
                raise TypeError("decode: ensemble[%d] is a %s, not a grassflow Model" % (k, type(o).__name__))
        with contextlib.ExitStack() as held:  # every model's lock, in one order (two threads cannot deadlock)
            for o in sorted({id(o): o for o in models}.values(), key=id):
                held.enter_context(o._lock)
            return self._decode(models, source, beam, length_penalty, max_len, bos, eos)

    def _decode(self, models, source, beam, length_penalty, max_len, bos, eos):
        for o in models:
            o._need("decode")
            if not o.config.get("source_vocab"):
                raise ValueError("%s: decode needs an encoder-decoder (source_vocab > 0); this model has no source"
                                 % o.path)
        src = _vocab_ids(source, self.config["source_vocab"], "decode: source")
        arr, n = _lib.int32_array(src, "decode: source")
        o = _lib.DecodeOpts(beam=_lib.integer(beam, "decode: beam", 1, 256),
                            length_penalty=float(length_penalty),
                            max_len=_lib.integer(max_len, "decode: max_len", 0, 1 << 20),
                            bos=_lib.integer(bos, "decode: bos", 0, self.config["vocab_size"] - 1),
                            eos=_lib.integer(eos, "decode: eos", 0, self.config["vocab_size"] - 1))
        room = o.max_len or min(_L.gf_decode_max_len(m._m) for m in models)
        out, got, score = (ctypes.c_int32 * room)(), _lib.c_i64(), _lib.c_d()
        handles = (ctypes.c_void_p * len(models))(*[m._m for m in models])
        if _L.gf_ensemble_decode(handles, len(models), arr, n, ctypes.byref(o), out, ctypes.byref(got),
                                 ctypes.byref(score)):
            raise _lib.error()
        return out[:got.value], score.value

    # --- text -------------------------------------------------------------------------------------------
    @_locked
    def encode_pair(self, premise, hypothesis, max_sent=48):
        """A sentence pair as the snli task reads it: the ids of [CLS] premise [SEP] hypothesis [SEP] (each
        sentence cut to max_sent pieces) and their token types (0s, then 1s), two lists."""
        self._need("a sentence pair", tokenizer=True)
        p, h = _lib.c_string(premise, "encode_pair: premise"), _lib.c_string(hypothesis, "encode_pair: hypothesis")
        max_sent = _lib.integer(max_sent, "encode_pair: max_sent", 1, _lib.INT64_MAX)
        ids, seg, n = _lib.P_i32(), _lib.P_u8(), _lib.c_i64()
        if _L.gf_nli_encode_pair(self._tok, p, h, max_sent, ctypes.byref(ids), ctypes.byref(seg), ctypes.byref(n)):
            raise _lib.error()
        try:
            return ids[:n.value], seg[:n.value]
        finally:
            _lib.libc.free(ids)
            _lib.libc.free(seg)

    @_locked
    def _single(self, text):
        """One text as `grassflow features` reads it: [CLS] text [SEP] with a BERT vocabulary, else its ids."""
        self._need("features", tokenizer=True)
        raw = _lib.text_bytes(text, "features: text")
        ids, n = _lib.P_i32(), _lib.c_i64()
        if _L.gf_encode_single(self._tok, raw, len(raw), b"text", ctypes.byref(ids), ctypes.byref(n)):
            raise _lib.error()
        try:
            return ids[:n.value]
        finally:
            _lib.libc.free(ids)

    @_locked
    def features(self, text, hypothesis=None, max_sent=48, stack=None):
        """The hidden states `grassflow features` prints for a text, or a sentence pair (text, hypothesis):
        Features(ids, pieces, hidden (tokens, width))."""
        self._need("features", tokenizer=True)
        ids, seg = self.encode_pair(text, hypothesis, max_sent) if hypothesis is not None else (self._single(text), None)
        hid = self.hidden(ids, seg, stack)
        return Features(ids, [self.tokenizer.piece(i) for i in ids], hid)

    @_locked
    def score(self, text, seq_len=None):
        """The next-token loss of a text (or of a list of token ids): every token but the first predicted
        from those before it. With learned positions (or a seq_len given), in blocks of seq_len + 1 tokens
        with stride seq_len (default max_len), as `grassflow eval --seq-len L` scores a split; otherwise the
        whole text as one sequence, as `grassflow score` scores one line of ids. Returns Score(tokens, loss,
        ppl, total)."""
        self._need("score", next_token=True)
        ids = self._ids(text, "score")
        if len(ids) < 2:
            raise ValueError("score: %d token(s); at least 2 are needed to predict one" % len(ids))
        arr, n = _lib.int32_array(ids, "score: ids")
        total, counted = _lib.c_d(0.0), _lib.c_i64(0)
        if seq_len is None and self.config["pos"] == "learned":
            seq_len = self.config["max_len"]
        if seq_len is not None:
            seq_len = _lib.integer(seq_len, "score: seq_len", 1, _lib.INT64_MAX)
        if seq_len is None:
            rc = self._with_stream(lambda s: _L.gf_stream_score(s, arr, ctypes.cast(ctypes.addressof(arr) + 4, _lib.P_i32),
                                                                n - 1, ctypes.byref(total), ctypes.byref(counted)))
            mean = total.value / counted.value if not rc else None
        else:
            src = _L.gf_block_source_create(arr, n, seq_len, 0)
            if not src:
                raise _lib.error()
            mean_c = _lib.c_d()
            rc = _L.gf_evaluate(self._m, src, 16, ctypes.byref(mean_c), ctypes.byref(counted))
            _L.gf_source_free(src)
            mean = mean_c.value
            total.value = mean * counted.value
        if rc:
            raise _lib.error()
        return Score(counted.value, mean, math.exp(mean) if mean < 709 else float("inf"), total.value)

    def _with_stream(self, fn):
        s = _L.gf_stream_create(self._m)
        if not s:
            raise _lib.error()
        try:
            return fn(s)
        finally:
            _L.gf_stream_free(s)

    @_locked
    def generate(self, prompt="", tokens=50, temperature=1.0, top_k=0, top_p=1.0, seed=1234, raw=False):
        """Continue prompt (a str, or bytes) with `tokens` sampled tokens, yielding the text each adds as it is
        sampled (the prompt itself is not yielded): prompt + "".join(pieces) is what `grassflow generate` prints
        with the same flags (without its final newline). temperature 0 is greedy; top_k 0 and top_p 1 cut
        nothing. Pieces are str (bytes that are not UTF-8, which a byte model can sample, become U+FFFD), or
        with raw=True the bytes exactly as the command prints them. The iterator reads the model as it goes:
        after close() it raises ValueError (it is not run to its end silently)."""
        self._need("generate", next_token=True, tokenizer=True)
        tokens = _lib.integer(tokens, "generate: tokens", 0, _lib.INT64_MAX)
        top_k = _lib.integer(top_k, "generate: top_k", 0, _lib.INT64_MAX)
        seed = _lib.integer(seed, "generate: seed", 0, _lib.UINT64_MAX)
        temperature, top_p = float(temperature), float(top_p)
        if not (math.isfinite(temperature) and temperature >= 0 and 0 < top_p <= 1):
            raise ValueError("generate: temperature %r, top_p %r; expected a finite temperature >= 0 (0 is greedy) and "
                             "0 < top_p <= 1" % (temperature, top_p))
        text = _lib.text_bytes(prompt, "generate: prompt")
        ids = self.tokenizer.encode(text, prompt=True)
        params = _lib.SamplerParams(temperature, top_k, top_p, seed)
        return _Generation(self, ids, text, tokens, params, bool(raw))

    def labels(self):
        """The class names of a classifier's task (its training recipe's), or None."""
        task = (self.recipe or {}).get("task")
        if self.next_token or not task:
            return None
        if not isinstance(task, str) or "\0" in task:
            raise ValueError("%s: the training recipe's task is %r; expected a task's name" % (self.path, task))
        ops = _L.gf_task_find(task.encode())
        # the built-in tasks name their classes without their data
        names = [_L.gf_task_label(ops, None, i) for i in range(self.n_outputs)] if ops else [None]
        return [x.decode() for x in names] if all(names) else None

    @_locked
    def predict(self, premise, hypothesis, max_sent=None, batch=16):
        """A sentence-pair classifier's answer, the pair read as the snli task reads it ([CLS] premise [SEP]
        hypothesis [SEP], token types 0 then 1, each sentence cut to max_sent WordPiece pieces: the run's
        "max_sent", 48 by default). Two strings: Prediction(label, index, probs). Two lists: a list of them,
        batched as `grassflow predict` batches a file of the same pairs in the same order (--batch, 16), so
        the same probabilities bit for bit (the library's gf_nli_predict)."""
        self._need("predict", next_token=False, tokenizer=True)
        one = isinstance(premise, (str, bytes))
        if one != isinstance(hypothesis, (str, bytes)):
            raise TypeError("predict: give a premise and a hypothesis (two strings), or two lists of them")
        P, H = ([premise], [hypothesis]) if one else (list(premise), list(hypothesis))
        if len(P) != len(H):
            raise ValueError("predict: %d premises and %d hypotheses; give one of each per pair" % (len(P), len(H)))
        if self.n_outputs != 3:
            raise ValueError("predict reads sentence pairs as the snli task does (3 classes); this classifier "
                             "has %d" % self.n_outputs)
        if max_sent is None:
            max_sent = _lib.integer((self.recipe or {}).get("max_sent", 48), "%s: the run's max_sent" % self.path, 1,
                                    _lib.INT64_MAX)
        max_sent = _lib.integer(max_sent, "predict: max_sent", 1, _lib.INT64_MAX)
        batch = _lib.integer(batch, "predict: batch", 1, _lib.INT64_MAX)
        n = len(P)
        probs, labels = (_lib.c_d * (3 * n))(), (ctypes.c_int32 * n)()
        ps = (ctypes.c_char_p * n)(*[_lib.c_string(x, "predict: premise %d" % i) for i, x in enumerate(P)])
        hs = (ctypes.c_char_p * n)(*[_lib.c_string(x, "predict: hypothesis %d" % i) for i, x in enumerate(H)])
        if n and _L.gf_nli_predict(self._m, self._tok, ps, hs, n, max_sent, batch, probs, labels):
            raise _lib.error()
        snli = _L.gf_task_find(b"snli")
        names = [_L.gf_task_label(snli, None, c).decode() for c in range(3)]
        out = [Prediction(names[labels[i]], labels[i], list(probs[3 * i:3 * i + 3])) for i in range(n)]
        return out[0] if one else out


class _Generation:
    """The iterator Model.generate returns: each next() samples one token (or, at the end, gives the bytes the
    detokenizer held back). Its stream, sampler and detokenizer are registered with the model, which frees
    them before itself: after the model's close() a next() is a ValueError, never a read of freed memory."""

    def __init__(self, model, ids, prompt, n_new, params, raw):
        self._model, self._prompt, self._n_new, self._params, self._raw = model, prompt, n_new, params, raw
        self._n_prompt, self._made, self._done, self._key = len(ids), 0, False, None
        self._arr = (ctypes.c_int32 * (len(ids) + min(n_new, 1024)))(*ids)

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        with self._model._lock:  # close() in another thread waits for this token
            return self._next()

    def _next(self):
        m = self._model
        if not m._m:
            raise ValueError("generate: the model %s was closed after %d of the %d tokens; read the iterator before "
                             "close()" % (m.path, self._made, self._n_new))
        try:
            piece = self._step(*self._objects())
        except BaseException:
            self.close()
            raise
        if piece is None:
            self.close()
            raise StopIteration
        return piece if self._raw else piece.decode("utf-8", "replace")

    def _objects(self):
        """The stream, sampler and detokenizer, made at the first token and registered with the model."""
        m = self._model
        if self._key is None:
            objs = (_L.gf_stream_create(m._m), _L.gf_sampler_create(m.config["vocab_size"], self._params),
                    _L.gf_detok_create(m._tok, self._prompt, len(self._prompt)))
            self._key = object()
            m._live[self._key] = objs
            if not all(objs):
                raise _lib.error()
        return m._live[self._key]

    def _step(self, s, smp, d):
        """The bytes of the next token, the held-back tail after the last (None when there is none)."""
        size = _lib.c_sz()
        if self._made == self._n_new:
            tail = ctypes.string_at(_L.gf_detok_flush(d, ctypes.byref(size)), size.value)
            self._done = True
            return tail or None
        n = self._n_prompt + self._made
        if n == len(self._arr):  # room for more ids: double it
            grown = (ctypes.c_int32 * (2 * n))()
            ctypes.memmove(grown, self._arr, n * ctypes.sizeof(ctypes.c_int32))
            self._arr = grown
        logits = _L.gf_stream_next(s, self._arr, n)  # feeds what the stream has not seen (a window: max_len)
        nxt = _L.gf_sampler_sample(smp, logits) if logits else -1
        if nxt < 0:
            raise _lib.error()
        self._arr[n] = nxt
        self._made += 1
        return ctypes.string_at(_L.gf_detok_push(d, nxt, ctypes.byref(size)), size.value)

    def close(self):
        """Stop: free the stream, sampler and detokenizer now (a later next() stops the iteration)."""
        self._done = True
        key, self._key = getattr(self, "_key", None), None
        if key is not None:
            self._model._release(key)

    __del__ = close

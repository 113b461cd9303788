"""ctypes bindings of the parts of include/grassflow.h the package uses (opaque pointers, plain arguments).

The library is found, in order: $GRASSFLOW_LIB (a path to libgrassflow.so), build/libgrassflow.so of the
repository this package sits in (after `make`), then the system's libgrassflow.so.ABI (`make install`).
"""
import ctypes
import ctypes.util
import operator
import os
import subprocess
import sys
import warnings

ABI_VERSION = 8  # GF_ABI_VERSION of the header these prototypes were written from

c_int, c_i64, c_u64, c_f, c_d = ctypes.c_int, ctypes.c_int64, ctypes.c_uint64, ctypes.c_float, ctypes.c_double
c_p, c_s, c_sz, c_bool = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool
P_i32, P_u8, P_f = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(c_f)


class GrassflowError(RuntimeError):
    """A failure the library reported: the message is its gf_last_error()."""


class Batch(ctypes.Structure):
    """gf_batch"""
    _fields_ = [("B", c_i64), ("T", c_i64), ("ids", P_i32), ("targets", P_i32), ("n_targets", c_i64),
                ("mask", P_u8), ("vectors", P_f), ("segments", P_u8), ("features", P_f),
                ("S", c_i64), ("source", P_i32), ("source_mask", P_u8)]


class SamplerParams(ctypes.Structure):
    """gf_sampler_params"""
    _fields_ = [("temperature", c_d), ("top_k", c_i64), ("top_p", c_d), ("seed", c_u64)]


class DecodeOpts(ctypes.Structure):
    """gf_decode_opts"""
    _fields_ = [("beam", c_i64), ("length_penalty", c_d), ("max_len", c_i64), ("bos", ctypes.c_int32),
                ("eos", ctypes.c_int32)]


# name: (restype, argtypes)
PROTOTYPES = {
    "gf_version": (c_s, []), "gf_abi_version": (c_int, []), "gf_last_error": (c_s, []),
    "gf_set_threads": (None, [c_int]), "gf_threads": (c_int, []), "gf_blas_kernel": (c_s, []),
    "gf_checkpoint_load": (c_p, [c_s, ctypes.POINTER(c_p), ctypes.POINTER(c_p)]),
    "gf_import_load": (c_p, [c_s, ctypes.POINTER(c_p)]), "gf_import_detect": (c_s, [c_s]),
    "gf_model_free": (None, [c_p]), "gf_model_config": (c_p, [c_p]),
    "gf_config_to_json": (c_p, [c_p, c_bool]),
    "gf_model_num_params": (c_i64, [c_p]), "gf_model_n_outputs": (c_i64, [c_p]),
    "gf_model_predicts_next_token": (c_bool, [c_p]),
    "gf_model_forward_batch": (c_int, [c_p, ctypes.POINTER(Batch), P_f]),
    "gf_model_logits": (P_f, [c_p]),
    "gf_model_stack_output": (P_f, [c_p, c_int, ctypes.POINTER(c_i64), ctypes.POINTER(c_i64),
                                    ctypes.POINTER(c_i64)]),
    "gf_model_set_training": (None, [c_p, c_bool, c_u64, c_u64]),
    "gf_decode_max_len": (c_i64, [c_p]),
    "gf_model_decode": (c_int, [c_p, P_i32, c_i64, ctypes.POINTER(DecodeOpts), P_i32, ctypes.POINTER(c_i64),
                                ctypes.POINTER(c_d)]),
    "gf_ensemble_decode": (c_int, [ctypes.POINTER(c_p), c_i64, P_i32, c_i64, ctypes.POINTER(DecodeOpts), P_i32,
                                   ctypes.POINTER(c_i64), ctypes.POINTER(c_d)]),
    "gf_stream_create": (c_p, [c_p]), "gf_stream_free": (None, [c_p]), "gf_stream_reset": (None, [c_p]),
    "gf_stream_step": (P_f, [c_p, ctypes.c_int32]), "gf_stream_next": (P_f, [c_p, P_i32, c_i64]), "gf_stream_feed": (c_int, [c_p, P_i32, c_i64]),
    "gf_stream_score": (c_int, [c_p, P_i32, P_i32, c_i64, ctypes.POINTER(c_d), ctypes.POINTER(c_i64)]),
    "gf_block_source_create": (c_p, [P_i32, c_i64, c_i64, c_u64]), "gf_source_free": (None, [c_p]),
    "gf_evaluate": (c_int, [c_p, c_p, c_i64, ctypes.POINTER(c_d), ctypes.POINTER(c_i64)]),
    "gf_tokenizer_free": (None, [c_p]), "gf_tokenizer_kind": (c_int, [c_p]), "gf_tok_kind_name": (c_s, [c_int]),
    "gf_tokenizer_vocab_size": (c_i64, [c_p]),
    "gf_tokenizer_piece": (c_p, [c_p, ctypes.c_int32, ctypes.POINTER(c_sz)]),
    "gf_tokenizer_find": (ctypes.c_int32, [c_p, c_s, c_sz]),
    "gf_tokenizer_encode": (c_int, [c_p, c_s, c_sz, c_s, ctypes.POINTER(P_i32), ctypes.POINTER(c_i64)]),
    "gf_tokenizer_encode_prompt": (c_int, [c_p, c_s, c_sz, c_s, ctypes.POINTER(P_i32), ctypes.POINTER(c_i64)]),
    "gf_tokenizer_decode": (c_p, [c_p, P_i32, c_i64, ctypes.POINTER(c_sz)]),
    "gf_nli_encode_pair": (c_int, [c_p, c_s, c_s, c_i64, ctypes.POINTER(P_i32), ctypes.POINTER(P_u8),
                                   ctypes.POINTER(c_i64)]),
    "gf_encode_single": (c_int, [c_p, c_s, c_sz, c_s, ctypes.POINTER(P_i32), ctypes.POINTER(c_i64)]),
    "gf_detok_create": (c_p, [c_p, c_s, c_sz]), "gf_detok_free": (None, [c_p]),
    "gf_detok_push": (c_p, [c_p, ctypes.c_int32, ctypes.POINTER(c_sz)]),
    "gf_detok_flush": (c_p, [c_p, ctypes.POINTER(c_sz)]),
    "gf_sampler_create": (c_p, [c_i64, SamplerParams]), "gf_sampler_free": (None, [c_p]),
    "gf_sampler_sample": (ctypes.c_int32, [c_p, P_f]),
    "gf_task_find": (c_p, [c_s]), "gf_task_label": (c_s, [c_p, c_p, c_i64]),
    "gf_nli_predict": (c_int, [c_p, c_p, ctypes.POINTER(c_s), ctypes.POINTER(c_s), c_i64, c_i64, c_i64,
                               ctypes.POINTER(c_d), P_i32]),
}


def _candidates():
    env = os.environ.get("GRASSFLOW_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    repo_lib = os.path.join(here, "..", "..", "build", "libgrassflow.so")
    return [os.path.normpath(repo_lib), "libgrassflow.so.%d" % ABI_VERSION]


def _cpu_kernel():
    """The OpenBLAS core type whose kernel runs this CPU fast (tests/coretype.sh's rule), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    return "SKYLAKEX" if "avx512f" in flags else "HASWELL" if "avx2" in flags else None


# a child process's answer: the kernel OpenBLAS loads with this environment, then, if this CPU cannot run it,
# the core type to use instead ("" for none) and the features it lacks (gf_blas_core_check)
_PROBE = """import ctypes, sys
L = ctypes.CDLL(sys.argv[1])
L.gf_blas_kernel.restype = ctypes.c_char_p
core = L.gf_blas_kernel() or b""
print(core.decode())
check = getattr(L, "gf_blas_core_check", None)
if check is not None and core:
    check.restype, check.argtypes = ctypes.c_char_p, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    why = ctypes.create_string_buffer(160)
    use = check(core, why, 160)
    if use is not None:
        print(use.decode())
        print(why.value.decode())
"""


def _probe(path):
    """The child's answer as a list of lines ([] when it could not say)."""
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, GRASSFLOW_NO_REEXEC="1")).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return out.splitlines()


def _fix_openblas_kernel(path):
    """What the command does before it runs (src/cli/main.c). OpenBLAS chooses its kernel as it loads, from
    OPENBLAS_CORETYPE or by itself, and a process cannot load it again, so a child process loads the library
    first and says which kernel OpenBLAS picked. One this CPU cannot run (OPENBLAS_CORETYPE=SKYLAKEX without
    AVX-512: SIGILL at the first matmul) is replaced by the fastest core type it runs, with a note on
    stderr. And Debian's OpenBLAS 0.3.21 does not know recent Xeons and EPYCs and falls back to its generic
    "Prescott" kernel, 5-10x slower, unless OPENBLAS_CORETYPE is set: on a CPU with AVX2 or AVX-512 the right
    core type goes into the environment. Either way before this process loads the library. A core type the
    user set that this CPU runs is kept."""
    set_by_user = "OPENBLAS_CORETYPE" in os.environ
    if set_by_user or _cpu_kernel() is not None:
        answer = _probe(path)
    else:
        answer = []
    if len(answer) >= 3:
        core, use, why = answer[:3]
        chosen = "OPENBLAS_CORETYPE=%s" % os.environ["OPENBLAS_CORETYPE"] if set_by_user else "chosen by OpenBLAS"
        sys.stderr.write("grassflow: note: OpenBLAS's %s kernel (%s) needs %s, which this CPU lacks: its first matmul "
                         "would stop with an illegal instruction; loading it with %s instead\n"
                         % (core, chosen, why, "OPENBLAS_CORETYPE=" + use if use else "OPENBLAS_CORETYPE unset"))
        if use:
            os.environ["OPENBLAS_CORETYPE"] = use
        else:
            os.environ.pop("OPENBLAS_CORETYPE", None)
    elif not set_by_user and answer[:1] == ["Prescott"]:
        os.environ["OPENBLAS_CORETYPE"] = _cpu_kernel()


_USER_CORETYPE = "OPENBLAS_CORETYPE" in os.environ  # a core type the user chose is theirs, said nothing about


def _check_openblas_kernel(lib):
    """OpenBLAS already loaded in this process (by numpy, say) before grassflow could set its core type."""
    kernel = lib.gf_blas_kernel()
    if kernel == b"Prescott" and _cpu_kernel() and not _USER_CORETYPE:
        warnings.warn("OpenBLAS runs its generic Prescott kernel on this CPU, 5-10x slower: it was loaded before "
                      "grassflow could choose (another module imported it first). Set OPENBLAS_CORETYPE=%s in "
                      "the environment before starting Python" % _cpu_kernel(), RuntimeWarning, stacklevel=3)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", c_s), ("dli_fbase", c_p), ("dli_sname", c_s), ("dli_saddr", c_p)]


def _openblas_file(lib):
    """The file of the OpenBLAS this process bound the library to (dladdr of one of its functions), or None."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:  # glibc before 2.34: in libdl
        try:
            dladdr = ctypes.CDLL("libdl.so.2").dladdr
        except (OSError, AttributeError):
            return None
    dladdr.restype, dladdr.argtypes = c_int, [c_p, ctypes.POINTER(_DlInfo)]
    try:
        fn = lib.openblas_get_corename
    except AttributeError:  # not OpenBLAS
        return None
    info = _DlInfo()
    if not dladdr(ctypes.cast(fn, c_p), ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.fsdecode(info.dli_fname)


def _pair_blas_interfaces(lib):
    """Load the BLAS and LAPACK interfaces (libblas.so.3, liblapack.so.3) of the OpenBLAS build the library
    runs on, unless a module loaded those names first. The dynamic loader binds a name (a soname) to the first
    file loaded under it: the library brings Debian's OpenMP build of libopenblas.so.0, and PyTorch or numpy
    imported after it would otherwise pair it with the default (pthreads) build's libblas.so.3. That pair
    hangs: the pthreads interface splits a matmul for OpenBLAS's thread count (2), the OpenMP build runs it
    with a team of omp_get_max_threads() (the 1 that torch sets), and the one thread waits forever for the
    other half (sched_yield in sgemm_thread_tn). With the interfaces of the same build, PyTorch runs on the
    OpenMP OpenBLAS, as with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp. Imported before the
    library, they bind it to their own libopenblas.so.0 (one build again)."""
    found = _openblas_file(lib)
    if not found:
        return
    folder = os.path.dirname(os.path.realpath(found))
    for name in ("libblas.so.3", "liblapack.so.3"):
        try:
            ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            continue  # loaded already (with its own libopenblas.so.0, which the library then shares)
        except OSError:
            pass
        mine = os.path.join(folder, name)
        if os.path.exists(mine):
            try:
                ctypes.CDLL(mine)
            except OSError as e:
                warnings.warn("grassflow could not load %s, the BLAS interface of its OpenBLAS (%s): PyTorch or numpy "
                              "imported after grassflow may hang in a matmul; import them first" % (mine, e),
                              RuntimeWarning, stacklevel=3)


def _open():
    # the command's default for OpenMP's idle threads (src/cli/main.c), read as libgomp loads
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "10000")
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        _fix_openblas_kernel(path)
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        if lib.gf_abi_version() != ABI_VERSION:
            raise ImportError("%s has ABI version %d; this package was written for %d\nHINT: rebuild with `make`, "
                              "or point GRASSFLOW_LIB at a matching libgrassflow.so"
                              % (path, lib.gf_abi_version(), ABI_VERSION))
        _check_openblas_kernel(lib)
        _pair_blas_interfaces(lib)
        return lib, path
    raise ImportError("libgrassflow.so not found: tried %s\nHINT: run `make` in the repository, set GRASSFLOW_LIB "
                      "to the library's path, or `make install`" % "; ".join(tried))


lib, path = _open()
libc = ctypes.CDLL(None)
libc.free.restype, libc.free.argtypes = None, [c_p]


def error(what=None):
    """A GrassflowError with the library's last message (or `what` when it has none)."""
    msg = (lib.gf_last_error() or b"").decode("utf-8", "replace")
    return GrassflowError(msg or what or "grassflow: unknown error")


def take_string(ptr, n=None):
    """The bytes of a malloc'd C string (n bytes, or up to its NUL), freed."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr, n) if n is not None else ctypes.string_at(ptr)
    finally:
        libc.free(ptr)


# the ranges of the C integer types arguments cross as (ctypes masks a larger int to these bits silently)
INT32_MAX, INT64_MAX, UINT64_MAX = 2 ** 31 - 1, 2 ** 63 - 1, 2 ** 64 - 1


_BOUND_NAMES = {INT32_MAX: "2^31 - 1", INT64_MAX: "2^63 - 1", UINT64_MAX: "2^64 - 1", -2 ** 31: "-2^31"}


def integer(value, what, lo=None, hi=None):
    """value as an int in [lo, hi] (None: unbounded; a bool is not an integer here), else TypeError or
    ValueError naming `what`."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not a bool" % what)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (what, type(value).__name__)) from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError("%s is %d; expected %s to %s" % (what, v, _BOUND_NAMES.get(lo, lo), _BOUND_NAMES.get(hi, hi)))
    return v


def text_bytes(value, what):
    """A text argument that crosses with its length: str (as UTF-8) or bytes-like, NUL bytes kept."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be a str or bytes, not %s" % (what, type(value).__name__))


def c_string(value, what):
    """A text argument that crosses as a C string (NUL-terminated): str (UTF-8) or bytes. A NUL byte inside is
    refused: the library would read the text only up to it."""
    raw = text_bytes(value, what)
    if b"\0" in raw:
        raise ValueError("%s holds a NUL byte (at byte %d); the library reads it as a C string, which would end "
                         "there: remove the NUL" % (what, raw.index(b"\0")))
    return raw


def path_bytes(path, what="path"):
    """A file-system path (str, bytes or os.PathLike) as the bytes the library opens; NUL bytes refused."""
    raw = os.fsencode(os.fspath(path))
    if b"\0" in raw:
        raise ValueError("%s %r holds a NUL byte; no file can have that name" % (what, os.fsdecode(raw)))
    return raw


def int32_array(values, what="ids"):
    """A ctypes int32 array of values (each an integer in int32's range, else ValueError naming its position)."""
    values = list(values)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int) or not -2 ** 31 <= v <= INT32_MAX:
            values[i] = integer(v, "%s[%d]" % (what, i), -2 ** 31, INT32_MAX)
    return (ctypes.c_int32 * max(len(values), 1))(*values), len(values)

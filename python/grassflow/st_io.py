"""Minimal safetensors reader/writer (json + numpy + struct); no dependency on the safetensors package.

Layout: u64 little-endian header length N, N bytes of JSON header (space-padded to a multiple of 8),
then the raw little-endian tensor data. Offsets in the header are relative to the data section.
"""
import collections
import json
import os
import stat
import struct

import numpy as np

_DTYPES = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
    "I8": np.dtype("i1"),
    "BF16": np.dtype("<u2"),  # numpy has no bfloat16: the raw 16 bits (the upper half of a float32's)
}


def dtype_name(arr):
    """The safetensors dtype of a numpy array (F32, F64, I32, I64, I8; BF16 for uint16 bits)."""
    for k, v in _DTYPES.items():
        if arr.dtype == v or arr.dtype == v.newbyteorder("="):
            return k
    raise ValueError("unsupported dtype %s (use float32/float64/int32/int64/int8, or uint16 for BF16 bits)" % arr.dtype)


MAX_HEADER = 100 << 20  # GF_ST_MAX_HEADER (src/io/safetensors.h)
_EXACT = 2 ** 53         # JSON numbers are doubles: a size or an offset is exact up to 2^53


def _parse_header(path, raw):
    """The header object of the file's bytes and where its data section starts, with the C reader's checks and
    messages (src/io/safetensors.c: parse_header, gf_st_parse)."""
    if len(raw) < 8:
        raise ValueError("%s: %d bytes is too short for a safetensors file (it starts with an 8-byte header length)"
                         % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8 or n > MAX_HEADER:
        raise ValueError("%s: header length %d is larger than the file (%d bytes) allows; the file is truncated or "
                         "not safetensors" % (path, n, len(raw)))
    text = bytes(raw[8:8 + n])
    if b"\0" in text:
        raise ValueError("%s: the header contains a NUL byte; not a safetensors file" % path)
    not_json = "%s: the header is not a JSON object; not a safetensors file (or corrupt)" % path
    repeated = []  # per object, in the order the decoder completes them (the header itself last): keys given twice

    def pairs(items):
        counts = collections.Counter(k for k, _ in items)
        repeated.append([k for k, c in counts.items() if c > 1])
        return dict(items)

    def constant(name):
        raise ValueError("%s is not JSON" % name)
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, RecursionError, ValueError) as e:
        raise ValueError("%s (%s)" % (not_json, str(e)[:120] or type(e).__name__)) from None
    if not isinstance(header, dict):
        raise ValueError(not_json)
    if repeated[-1]:
        raise ValueError("%s: tensor \"%s\" appears twice in the header" % (path, repeated[-1][0]))
    inner = next((r[0] for r in repeated[:-1] if r), None)
    if inner is not None:
        raise ValueError("%s: the header gives \"%s\" twice in one object; not a safetensors file (or corrupt)"
                         % (path, inner))
    return header, 8 + n


def _size(v):
    """A JSON number that is a size (an integer in [0, 2^53]), or None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= _EXACT or v != int(v):
        return None
    return int(v)


def _metadata(path, meta):
    if not isinstance(meta, dict):
        raise ValueError("%s: __metadata__ must be an object of strings" % path)
    for k, v in meta.items():
        if not isinstance(v, str):
            raise ValueError("%s: __metadata__[\"%s\"] must be a string" % (path, k))
    return dict(meta)


def _entry(path, name, info, data_size):
    """A tensor's header entry as (dtype, shape, begin, end), with the C reader's checks (parse_tensor)."""
    if not (isinstance(info, dict) and isinstance(info.get("dtype"), str) and isinstance(info.get("shape"), list)
            and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2):
        raise ValueError("%s: tensor \"%s\" needs \"dtype\" (string), \"shape\" (list) and \"data_offsets\" ([begin, "
                         "end])" % (path, name))
    dt = info["dtype"]
    if dt not in _DTYPES:
        raise ValueError("%s: tensor \"%s\" has dtype %s; grassflow reads F32, I32, F64, I64, I8 and BF16 (save the "
                         "tensor as float32)" % (path, name, dt))
    if len(info["shape"]) > 8:
        raise ValueError("%s: tensor \"%s\" has %d dimensions; at most 8 are supported" % (path, name, len(info["shape"])))
    shape, count = [], 1
    for d, v in enumerate(info["shape"]):
        size = _size(v)
        if size is None or count * size >= 2 ** 64:
            raise ValueError("%s: tensor \"%s\": shape entry %d is not a size (or the shape's product overflows)"
                             % (path, name, d))
        shape.append(size)
        count *= size
    b, e = (_size(v) for v in info["data_offsets"])
    if b is None or e is None or b > e or e > data_size:
        raise ValueError("%s: tensor \"%s\": data_offsets are not a range inside the %d-byte data section"
                         % (path, name, data_size))
    if count * _DTYPES[dt].itemsize != e - b:
        raise ValueError("%s: tensor \"%s\": shape needs %d elements but data_offsets span %d bytes"
                         % (path, name, count, e - b))
    return dt, shape, b, e


def _check_tiling(path, spans, data_size):
    pos = 0
    for b, e in sorted(spans):
        if b != pos:
            raise ValueError("%s: tensor data %s at byte %d of the data section (tensors must tile it without gaps or "
                             "overlaps)" % (path, "overlaps" if b < pos else "leaves a gap", b))
        pos = e
    if pos != data_size:
        raise ValueError("%s: %d bytes at the end of the data section belong to no tensor (file corrupt?)"
                         % (path, data_size - pos))


def _read_regular(path):
    """The bytes of a regular file: a FIFO would block the read, a device never end (src/io/file.c's checks)."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise ValueError("%s is a directory; expected a regular file" % path)
    if stat.S_ISFIFO(st.st_mode):
        raise ValueError("%s is a FIFO (named pipe); expected a regular file" % path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("%s is not a regular file (a device or a socket?); expected a regular file" % path)
    with open(path, "rb") as f:
        return f.read()


def read(path):
    """Return (dict name -> numpy array, metadata dict). Dict keeps the file's header order. A file the C reader
    refuses (src/io/safetensors.c) is a ValueError with its message, raised before any tensor is made: every
    tensor's bytes are inside the file, so nothing larger than the file is allocated."""
    raw = _read_regular(path)
    header, start = _parse_header(path, raw)
    data = memoryview(raw)[start:]
    meta, entries = {}, {}
    for name, info in header.items():
        if name == "__metadata__":
            meta = _metadata(path, info)
        else:
            entries[name] = _entry(path, name, info, len(data))
    _check_tiling(path, [(b, e) for _, _, b, e in entries.values()], len(data))
    out = {}
    for name, (dt, shape, b, e) in entries.items():
        arr = np.frombuffer(data[b:e], dtype=_DTYPES[dt]).reshape(shape)
        out[name] = arr.astype(_DTYPES[dt].newbyteorder("="), copy=True)
    return out, meta


def write(path, tensors, metadata=None):
    """Write tensors (ordered mapping name -> numpy array) in insertion order, atomically."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    off = 0
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        dt = dtype_name(arr)
        buf = np.ascontiguousarray(arr, dtype=_DTYPES[dt]).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(buf)]}
        chunks.append(buf)
        off += len(buf)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((-len(hb)) % 8)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hb)))
            f.write(hb)
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


LOWP_MAX_COLS = 65536  # GF_LOWP_MAX_COLS (src/compute/lowp.h)


def int8_values(path, name, q, scale):
    """w = q * scale in float32 (an I8 matrix, its F32 row scales), with the checks of the C loader's load_int8,
    row by row: a row's scale finite and >= 0, its codes in [-127, 127]."""
    R, C = q.shape
    if C > LOWP_MAX_COLS:
        raise ValueError("%s: \"%s\" has %d columns; int8 weights take at most %d" % (path, name, C, LOWP_MAX_COLS))
    bad_scale = np.flatnonzero(~(np.isfinite(scale) & (scale >= 0)))
    bad_code = np.argwhere(q == -128)
    rs = int(bad_scale[0]) if bad_scale.size else R
    if bad_code.size and int(bad_code[0][0]) < rs:
        r, c = (int(x) for x in bad_code[0])
        raise ValueError("%s: \"%s\" holds the code -128 at [%d][%d]; int8 codes are in [-127, 127]"
                         % (path, name, r, c))
    if rs < R:
        raise ValueError("%s: \"%s.scale\" row %d has scale %g; scales are finite and >= 0"
                         % (path, name, rs, scale[rs]))
    with np.errstate(over="ignore"):
        w = q.astype(np.float32) * scale.astype(np.float32)[:, None]
    inf = np.argwhere(~np.isfinite(w))
    if inf.size:  # a finite scale whose weight is not: refused, as an inf weight is (the C loader's message)
        r, c = (int(x) for x in inf[0])
        raise ValueError("%s: \"%s.scale\" row %d has scale %g: its code %d at [%d][%d] times it is past float32's "
                         "largest (3.4e38), an infinite weight; a scale is at most 3.4e38 / 127 (2.7e36) for codes up "
                         "to 127\nHINT: the file is corrupt or forged; quantize the fp32 checkpoint again"
                         % (path, name, r, scale[r], q[r, c], r, c))
    return w


def bf16_values(h):
    """The float32 values of BF16 bits (the upper half of a float32's)."""
    return (h.astype(np.uint32) << 16).view(np.float32)


def dequantize(tensors, metadata=None, path="tensors"):
    """The F32 tensors an int8 or bf16 checkpoint (grassflow quantize; docs/precision.md) stands for: an I8
    matrix NAME times its row scales NAME.scale (F32, one per row: w = q * scale, in float32 as grassflow
    computes it; scales finite and >= 0, codes in [-127, 127]), a BF16 one widened to float32; every other
    tensor as it is. The .scale entries are dropped. (grassflow.torch.load checks the rest: which tensors may
    be low-precision, and what the file says it holds.)"""
    out = {}
    for name, arr in tensors.items():
        if name.endswith(".scale") and name[:-6] in tensors and tensors[name[:-6]].dtype == np.int8:
            continue
        if arr.dtype == np.int8:
            sc = tensors.get(name + ".scale")
            if arr.ndim != 2 or sc is None or sc.dtype != np.float32 or sc.shape != arr.shape[:1]:
                raise ValueError("%s: tensor \"%s\" is I8, and its scales \"%s.scale\" should be F32 of shape (%d), one "
                                 "per row; the file has %s" % (path, name, name, arr.shape[0] if arr.ndim else 0,
                                                               "none" if sc is None else "another dtype or shape"))
            out[name] = int8_values(path, name, arr, sc)
        elif arr.dtype == np.uint16:  # BF16 bits
            out[name] = bf16_values(arr)
        else:
            out[name] = arr
    return out

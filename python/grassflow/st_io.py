"""Minimal safetensors reader/writer (json + numpy + struct); no dependency on the safetensors package.

Layout: u64 little-endian header length N, N bytes of JSON header (space-padded to a multiple of 8),
then the raw little-endian tensor data. Offsets in the header are relative to the data section.
"""
import json
import os
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


def _dtype_name(arr):
    for k, v in _DTYPES.items():
        if arr.dtype == v or arr.dtype == v.newbyteorder("="):
            return k
    raise ValueError("unsupported dtype %s (use float32/float64/int32/int64/int8, or uint16 for BF16 bits)" % arr.dtype)


def read(path):
    """Return (dict name -> numpy array, metadata dict). Dict keeps the file's header order."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError("%s: header length %d exceeds file size %d" % (path, n, len(raw)))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        dt = info["dtype"]
        if dt not in _DTYPES:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        shape = [int(s) for s in info["shape"]]
        b, e = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape)) if shape else 1
        if e - b != count * _DTYPES[dt].itemsize or e > len(data) or b < 0:
            raise ValueError("%s: tensor %s has bad data_offsets %s for shape %s" % (path, name, [b, e], shape))
        arr = np.frombuffer(data[b:e], dtype=_DTYPES[dt], count=count).reshape(shape)
        out[name] = arr.astype(_DTYPES[dt].newbyteorder("="), copy=True)
    return out, dict(meta)


def write(path, tensors, metadata=None):
    """Write tensors (ordered mapping name -> numpy array) in insertion order, atomically."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    off = 0
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        dt = _dtype_name(arr)
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


def dequantize(tensors, metadata=None):
    """The F32 tensors an int8 or bf16 checkpoint (grassflow quantize; docs/precision.md) stands for: an I8
    matrix NAME times its row scales NAME.scale (w = q * scale, in float32 as grassflow computes it), a BF16
    one widened to float32; every other tensor as it is. The .scale entries are dropped."""
    out = {}
    for name, arr in tensors.items():
        if name.endswith(".scale") and name[:-6] in tensors and tensors[name[:-6]].dtype == np.int8:
            continue
        if arr.dtype == np.int8:
            if name + ".scale" not in tensors:
                raise ValueError("tensor %s is I8 without its scales %s.scale" % (name, name))
            out[name] = arr.astype(np.float32) * tensors[name + ".scale"].astype(np.float32)[:, None]
        elif arr.dtype == np.uint16:  # BF16 bits
            out[name] = (arr.astype(np.uint32) << 16).view(np.float32)
        else:
            out[name] = arr
    return out

"""Draw the tensors that a config initialises at 0 (Grassmann's conv.* and mix.mix.*) from U(-1.5, 1.5) in an init
checkpoint, in place, so that a parity case holds the model to PyTorch away from the point where those tensors
make the layer what it is without them (there the first AdamW steps are signs of gradients near 0, which
float32 and float64 may round apart). Standard library only: a safetensors file is 8 bytes of header length, a
JSON header and the raw data.
    draw_tensors.py INIT.safetensors"""
import json
import random
import struct
import sys

DRAWN = (".mix.conv.", ".mix.mix.")


def main(path):
    data = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    rng = random.Random(3)
    drawn = 0
    for name in sorted(header):
        info = header[name]
        if name == "__metadata__" or not any(k in name for k in DRAWN):
            continue
        if info["dtype"] != "F32":
            sys.exit("draw_tensors.py: %s: %s is %s; expected F32" % (path, name, info["dtype"]))
        s, e = info["data_offsets"]
        count = (e - s) // 4
        data[8 + n + s:8 + n + e] = struct.pack("<%df" % count, *(rng.uniform(-1.5, 1.5) for _ in range(count)))
        drawn += 1
    if not drawn:
        sys.exit("draw_tensors.py: %s has no tensor named like %s; the case needs none drawn" % (path, DRAWN))
    open(path, "wb").write(data)


if __name__ == "__main__":
    main(sys.argv[1])

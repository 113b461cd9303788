#!/usr/bin/python3
"""The image study's linear baseline (scripts/image_study.sh linear): softmax regression on the 784 pixels of
Fashion-MNIST, in numpy, read as grassflow's image task reads them (scaled to [0, 1], centred by 0.2860 and
0.3530; trained on the training file but every tenth image, grassflow's train split), minibatches of 128,
Adam at lr 1e-3 for --epochs epochs (default 10), the order drawn from --seed. Prints one JSON object: the test
split's accuracy and mean loss, the parameters (7,850), the seed and the seconds.

    /usr/bin/python3 scripts/image_linear.py [--seed S] [--epochs E] [--dir DIR]
"""
import argparse
import gzip
import json
import time

import numpy as np


def idx(path, dims):
    raw = gzip.open(path).read()
    n = int.from_bytes(raw[4:8], "big")
    head = 4 + 4 * dims
    shape = [int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(dims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=head)
    if data.size != int(np.prod(shape)):
        raise SystemExit("image_linear.py: %s holds %d bytes past its header; its header says %s" % (path, data.size, shape))
    return data.reshape(n, -1)


def load(d, stem):
    x = (idx("%s/%s-images-idx3-ubyte.gz" % (d, stem), 3).astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return x, idx("%s/%s-labels-idx1-ubyte.gz" % (d, stem), 1).reshape(-1).astype(np.int64)


def loss_grad(W, b, x, y):
    z = x @ W + b
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-30).mean()
    p[np.arange(len(y)), y] -= 1.0
    p /= len(y)
    return loss, x.T @ p, p.sum(0), z


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    t0 = time.time()
    x, y = load(a.dir, "train")
    keep = np.arange(len(y)) % 10 != 9  # grassflow's train split: every tenth image is valid
    x, y = x[keep], y[keep]
    xt, yt = load(a.dir, "t10k")
    rng = np.random.default_rng(a.seed)
    W, b = (rng.standard_normal((784, 10)) * 0.01).astype(np.float32), np.zeros(10, np.float32)
    m = [np.zeros_like(W), np.zeros_like(b)]
    v = [np.zeros_like(W), np.zeros_like(b)]
    step, lr, b1, b2 = 0, 1e-3, 0.9, 0.999
    for _ in range(a.epochs):
        order = rng.permutation(len(y))
        for k in range(0, len(y), 128):
            i = order[k:k + 128]
            _, gW, gb, _ = loss_grad(W, b, x[i], y[i])
            step += 1
            for j, (p, g) in enumerate(((W, gW), (b, gb))):
                m[j] = b1 * m[j] + (1 - b1) * g
                v[j] = b2 * v[j] + (1 - b2) * g * g
                p -= lr * (m[j] / (1 - b1 ** step)) / (np.sqrt(v[j] / (1 - b2 ** step)) + 1e-8)
    loss, _, _, z = loss_grad(W, b, xt, yt)
    print(json.dumps({"model": "softmax regression on the 784 pixels (numpy)", "seed": a.seed, "epochs": a.epochs,
                      "train_images": int(len(y)), "images": int(len(yt)), "parameters": 784 * 10 + 10,
                      "accuracy": float((z.argmax(1) == yt).mean()), "loss": float(loss),
                      "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()

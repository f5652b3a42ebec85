#!/usr/bin/env python3
"""Train the bundled handwritten-digits CNN and export it as a microtir JSON graph.

A small CNN in plain numpy (forward and backward written out here), trained on
scikit-learn's bundled 8x8 digits (no download):

    x [N,1,8,8] -> conv2d 3x3 pad 1 (8 ch, no bias) -> batch_norm -> relu
      -> max_pool2d 2x2 stride 2 -> conv2d 3x3 pad 1 (16 ch) -> relu
      -> max_pool2d 2x2 stride 2 -> flatten -> dense 10 -> softmax

Writes (next to each other, under models/digits/ by default):
    digits.json              the graph (docs/graph-format.md), NCHW, input "x" [1,1,8,8]
    weights/*.npy            the constants, little-endian float32 (numpy.save)
    test_images.npy          100 held-out test images, [100,1,8,8] float32
    test_labels.npy          their labels, [100] int64
    reference_probs.npy      this script's forward pass on them, [100,10] float32

Deterministic (fixed seed, no threads needed). Needs python3-numpy and python3-sklearn
(Debian packages); only this tool needs them, never the build or the tests.

    python3 tools/train_digits.py [--out models/digits] [--epochs 40]
"""
import argparse
import json
import os
import sys

import numpy as np
from sklearn.datasets import load_digits

SEED = 20261123
BN_EPS = 1e-5


# ---------------------------------------------------------------- layers (float64)
def im2col3x3(x):
    """x [N,C,H,W] -> cols [N, C*9, H*W] for a 3x3 window, padding 1, stride 1."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, c, 3, 3, h, w), dtype=x.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, :, i, j] = xp[:, :, i:i + h, j:j + w]
    return cols.reshape(n, c * 9, h * w)


def col2im3x3(dcols, shape):
    n, c, h, w = shape
    dcols = dcols.reshape(n, c, 3, 3, h, w)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dcols.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + h, j:j + w] += dcols[:, :, i, j]
    return dxp[:, :, 1:-1, 1:-1]


def conv_forward(x, w, b):
    n, _, h, wd = x.shape
    o = w.shape[0]
    cols = im2col3x3(x)
    out = np.einsum("ok,nkp->nop", w.reshape(o, -1), cols)
    if b is not None:
        out += b[None, :, None]
    return out.reshape(n, o, h, wd), cols


def conv_backward(dout, x_shape, cols, w):
    n, o, h, wd = dout.shape
    d = dout.reshape(n, o, h * wd)
    dw = np.einsum("nop,nkp->ok", d, cols).reshape(w.shape)
    db = d.sum(axis=(0, 2))
    dcols = np.einsum("ok,nop->nkp", w.reshape(o, -1), d)
    return col2im3x3(dcols, x_shape), dw, db


def maxpool_forward(x):
    n, c, h, w = x.shape
    r = x.reshape(n, c, h // 2, 2, w // 2, 2)
    out = r.max(axis=(3, 5))
    # The first maximum of each window gets the gradient.
    flat = r.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    arg = flat.argmax(axis=-1)
    return out, arg


def maxpool_backward(dout, arg, x_shape):
    n, c, h, w = x_shape
    flat = np.zeros((n, c, h // 2, w // 2, 4), dtype=dout.dtype)
    np.put_along_axis(flat, arg[..., None], dout[..., None], axis=-1)
    return flat.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(x_shape)


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- the model
def init_params(rng):
    def he(shape, fan_in):
        return rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)
    return {
        "conv1_w": he((8, 1, 3, 3), 9),
        "bn1_gamma": np.ones(8), "bn1_beta": np.zeros(8),
        "conv2_w": he((16, 8, 3, 3), 72), "conv2_b": np.zeros(16),
        "fc_w": he((10, 64), 64), "fc_b": np.zeros(10),
    }


def train_step(p, x, y):
    """Forward with batch statistics, backward; returns (loss, grads, batch mean, var)."""
    n = x.shape[0]
    c1, cols1 = conv_forward(x, p["conv1_w"], None)
    mu = c1.mean(axis=(0, 2, 3))
    var = c1.var(axis=(0, 2, 3))
    inv = 1.0 / np.sqrt(var + BN_EPS)
    xhat = (c1 - mu[None, :, None, None]) * inv[None, :, None, None]
    bn = xhat * p["bn1_gamma"][None, :, None, None] + p["bn1_beta"][None, :, None, None]
    r1 = np.maximum(bn, 0)
    p1, arg1 = maxpool_forward(r1)
    c2, cols2 = conv_forward(p1, p["conv2_w"], p["conv2_b"])
    r2 = np.maximum(c2, 0)
    p2, arg2 = maxpool_forward(r2)
    f = p2.reshape(n, -1)
    logits = f @ p["fc_w"].T + p["fc_b"]
    prob = softmax(logits)
    loss = -np.log(prob[np.arange(n), y] + 1e-12).mean()

    g = {}
    dlogits = prob.copy()
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    g["fc_w"] = dlogits.T @ f
    g["fc_b"] = dlogits.sum(axis=0)
    df = dlogits @ p["fc_w"]
    dp2 = df.reshape(p2.shape)
    dr2 = maxpool_backward(dp2, arg2, r2.shape)
    dc2 = dr2 * (c2 > 0)
    dp1, g["conv2_w"], g["conv2_b"] = conv_backward(dc2, p1.shape, cols2, p["conv2_w"])
    dr1 = maxpool_backward(dp1, arg1, r1.shape)
    dbn = dr1 * (bn > 0)
    g["bn1_gamma"] = (dbn * xhat).sum(axis=(0, 2, 3))
    g["bn1_beta"] = dbn.sum(axis=(0, 2, 3))
    dxhat = dbn * p["bn1_gamma"][None, :, None, None]
    m = c1.shape[0] * c1.shape[2] * c1.shape[3]
    dc1 = (inv[None, :, None, None] / m) * (
        m * dxhat - dxhat.sum(axis=(0, 2, 3))[None, :, None, None]
        - xhat * (dxhat * xhat).sum(axis=(0, 2, 3))[None, :, None, None])
    _, g["conv1_w"], _ = conv_backward(dc1, x.shape, cols1, p["conv1_w"])
    return loss, g


def forward_infer(p, x):
    """Inference forward pass (batch_norm with the exported statistics), float64."""
    c1, _ = conv_forward(x, p["conv1_w"], None)
    scale = p["bn1_gamma"] / np.sqrt(p["bn1_var"] + BN_EPS)
    bn = (c1 - p["bn1_mean"][None, :, None, None]) * scale[None, :, None, None] \
        + p["bn1_beta"][None, :, None, None]
    p1, _ = maxpool_forward(np.maximum(bn, 0))
    c2, _ = conv_forward(p1, p["conv2_w"], p["conv2_b"])
    p2, _ = maxpool_forward(np.maximum(c2, 0))
    logits = p2.reshape(x.shape[0], -1) @ p["fc_w"].T + p["fc_b"]
    return softmax(logits)


# ---------------------------------------------------------------- export
def graph_json(name):
    consts = ["conv1_w", "bn1_gamma", "bn1_beta", "bn1_mean", "bn1_var",
              "conv2_w", "conv2_b", "fc_w", "fc_b"]
    nchw = "NCHW"
    return {
        "format": "microtir-graph",
        "version": 1,
        "name": name,
        "inputs": [{"name": "x", "shape": [1, 1, 8, 8], "dtype": "float32"}],
        "constants": [{"name": c, "file": "weights/%s.npy" % c} for c in consts],
        "nodes": [
            {"name": "conv1", "op": "conv2d", "inputs": ["x", "conv1_w"],
             "attrs": {"strides": [1, 1], "padding": [1, 1, 1, 1], "layout": nchw}},
            {"name": "bn1", "op": "batch_norm",
             "inputs": ["conv1", "bn1_gamma", "bn1_beta", "bn1_mean", "bn1_var"],
             "attrs": {"epsilon": BN_EPS, "axis": 1}},
            {"name": "relu1", "op": "relu", "inputs": ["bn1"]},
            {"name": "pool1", "op": "max_pool2d", "inputs": ["relu1"],
             "attrs": {"pool_size": [2, 2], "strides": [2, 2], "layout": nchw}},
            {"name": "conv2", "op": "conv2d", "inputs": ["pool1", "conv2_w", "conv2_b"],
             "attrs": {"strides": [1, 1], "padding": [1, 1, 1, 1], "layout": nchw}},
            {"name": "relu2", "op": "relu", "inputs": ["conv2"]},
            {"name": "pool2", "op": "max_pool2d", "inputs": ["relu2"],
             "attrs": {"pool_size": [2, 2], "strides": [2, 2], "layout": nchw}},
            {"name": "flat", "op": "flatten", "inputs": ["pool2"], "attrs": {"axis": 1}},
            {"name": "fc", "op": "dense", "inputs": ["flat", "fc_w", "fc_b"]},
            {"name": "probs", "op": "softmax", "inputs": ["fc"], "attrs": {"axis": -1}},
        ],
        "outputs": ["probs"],
    }


def dump_graph(g):
    """The graph as JSON text with one input, constant or node a line."""
    lines = ["{"]
    items = list(g.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
            lines.append("  %s: [" % json.dumps(k))
            for j, e in enumerate(v):
                lines.append("    " + json.dumps(e) + ("," if j < len(v) - 1 else ""))
            lines.append("  ]" + comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v), comma))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, "models", "digits"))
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()

    digits = load_digits()
    x_all = (digits.images / 16.0).astype(np.float32)[:, None, :, :]   # [1797,1,8,8] in [0,1]
    y_all = digits.target.astype(np.int64)
    rng = np.random.default_rng(SEED)
    perm = rng.permutation(len(y_all))
    n_test = 360
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    x_tr, y_tr = x_all[train_idx].astype(np.float64), y_all[train_idx]
    x_te, y_te = x_all[test_idx], y_all[test_idx]

    p = init_params(rng)
    # Adam.
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, t = 0.9, 0.999, 0
    for epoch in range(args.epochs):
        order = rng.permutation(len(y_tr))
        lr = args.lr * (0.5 * (1 + np.cos(np.pi * epoch / args.epochs)))  # cosine decay
        total = 0.0
        for s in range(0, len(order), args.batch):
            idx = order[s:s + args.batch]
            loss, g = train_step(p, x_tr[idx], y_tr[idx])
            total += loss * len(idx)
            t += 1
            for k in p:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
                mh = m[k] / (1 - b1 ** t)
                vh = v[k] / (1 - b2 ** t)
                p[k] -= lr * mh / (np.sqrt(vh) + 1e-8)
        if epoch % 10 == 9 or epoch == args.epochs - 1:
            print("epoch %3d  loss %.4f" % (epoch + 1, total / len(y_tr)))

    # batch_norm statistics for inference: exact over the whole training set.
    c1, _ = conv_forward(x_tr, p["conv1_w"], None)
    p["bn1_mean"] = c1.mean(axis=(0, 2, 3))
    p["bn1_var"] = c1.var(axis=(0, 2, 3))

    # Export as float32; the reference runs on exactly the exported values.
    p32 = {k: np.ascontiguousarray(val, dtype="<f4") for k, val in p.items()}
    pref = {k: val.astype(np.float64) for k, val in p32.items()}
    probs_te = forward_infer(pref, x_te.astype(np.float64))
    acc_full = float((probs_te.argmax(axis=1) == y_te).mean())
    probs_tr = forward_infer(pref, x_tr)
    acc_train = float((probs_tr.argmax(axis=1) == y_tr).mean())
    acc_100 = float((probs_te[:100].argmax(axis=1) == y_te[:100]).mean())
    print("train accuracy %.4f (%d images)" % (acc_train, len(y_tr)))
    print("test accuracy  %.4f (%d held-out images)" % (acc_full, n_test))
    print("test accuracy  %.4f (the 100 exported images)" % acc_100)
    if acc_full < 0.95:
        print("error: test accuracy below 0.95", file=sys.stderr)
        return 1

    os.makedirs(os.path.join(args.out, "weights"), exist_ok=True)
    for k, val in p32.items():
        np.save(os.path.join(args.out, "weights", k + ".npy"), val)
    np.save(os.path.join(args.out, "test_images.npy"), np.ascontiguousarray(x_te[:100], dtype="<f4"))
    np.save(os.path.join(args.out, "test_labels.npy"), np.ascontiguousarray(y_te[:100], dtype="<i8"))
    np.save(os.path.join(args.out, "reference_probs.npy"), probs_te[:100].astype("<f4"))
    with open(os.path.join(args.out, "digits.json"), "w") as f:
        f.write(dump_graph(graph_json("digits")))
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch reference of the grassflow models: computes exactly what docs/model.md specifies. The parity tests
(tests/parity/parity.sh, through tests/parity/torch_ref) run it in float64; grassflow.torch.load builds it in float32.

Clarity over speed: the Grassmann mixer is written the literal way (loop over offsets, project each
offset, then average). state_dict() keys are exactly the safetensors names of docs/model.md, in the
checkpoint's order; the one persistent buffer is a performer's random features (mix.omega: saved, loaded,
never trained: not a parameter, so no optimizer sees it).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import config_schema

# the config: read and checked as the C library reads it (grassflow/config_schema.py)
MIXER_DEFAULTS = config_schema.MIXER_DEFAULTS


def normalize_config(cfg, src="config"):
    """Validate cfg (config format 1, 2 or 3) as the library does and return a copy with every model key,
    "task" ("lm" or "classify"), "head" and "layers": one dict per layer holding "mixer" and all of that
    mixer's keys; "stacks" likewise. A ValueError names what is wrong, beginning with src."""
    return config_schema.normalize(cfg, src)


def sinusoidal_table(max_len, d):
    """P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(t / 10000^(2i/d)), in float64."""
    t = torch.arange(max_len, dtype=torch.float64)[:, None]
    col = torch.arange(d)
    two_i = (col // 2 * 2).to(torch.float64)
    ang = t / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)[None, :]
    return torch.where(col[None, :] % 2 == 0, torch.sin(ang), torch.cos(ang))


def sinusoidal2d_table(T, d, G):
    """pos sinusoidal-2d: position p of a grid of G columns as sinusoidal_table's row p // G over the first d // 2
    channels and its row p % G over the rest."""
    p = torch.arange(T)
    return torch.cat([sinusoidal_table(T, d // 2)[p // G], sinusoidal_table(T, d - d // 2)[p % G]], dim=1)


def position_table(kind, T, d, grid):
    """The sinusoidal position rows of T positions (kind sinusoidal or sinusoidal-2d)."""
    return sinusoidal2d_table(T, d, grid) if kind == "sinusoidal-2d" else sinusoidal_table(T, d)


class _OffsetMix(nn.Module):
    """The Grassmann mixer's offset_mix learned logits (src/mixers/grassmann.c): bias (n_offsets), starting at 0, the
    same for every position."""

    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n))

    def forward(self, h):
        return self.bias


class _CausalDWConv(nn.Module):
    """The Grassmann mixer's conv tensors (src/mixers/grassmann.c): weight (d, K), column k for lag k, and bias (d)."""

    def __init__(self, d, K):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d, K))
        self.bias = nn.Parameter(torch.zeros(d))


class GrassmannMixer(nn.Module):
    def __init__(self, d, r, offsets, eps, extra_proj, bidirectional=False, window=0, heads=1, plucker=True,
                 gate=True, grid=0, conv=0, gate_form="channel", offset_mix="mean"):
        """plucker False (the paper's ablation): each pair enters as [z_later; z_earlier] through pair (2r -> d)
        in place of its normalised Pluecker coordinates (heads must be 1; eps is unused); gate False: no gate,
        the output is (h + g) / 2; gate_form "scalar": one gate per position, sigmoid(gate([h; g])) of shape
        (B, T, 1), for every channel; offset_mix "learned": the mean over a token's partners becomes a softmax over
        them of learned logits mix.bias, one per offset (a partner t + D shares t - D's), starting at 0; "token":
        the logits are mix(h_t) (nn.Linear(d, n_offsets), starting at 0)."""
        super().__init__()
        self.r = r
        self.window = int(window)  # > 0: a pair only within one window of this many positions
        self.grid = int(grid)      # > 0: positions on a grid of this many columns; a step may not wrap a row
        self.heads = int(heads)    # z in heads slices of r / heads, each paired with itself only
        rh = r // self.heads
        self.offsets = list(offsets)
        self.eps = float(eps)
        self.bidirectional = bidirectional
        C = self.heads * (rh * (rh - 1) // 2)
        self.use_plucker = bool(plucker)
        if not self.use_plucker and self.heads != 1:
            raise ValueError("GrassmannMixer: heads %d with plucker False (heads split the Pluecker coordinates)"
                             % self.heads)
        # registration order = checkpoint order: red, plucker or pair, gate, out
        self.red = nn.Linear(d, r)
        if self.use_plucker:
            self.plucker = nn.Linear(C, d)
        else:
            self.pair = nn.Linear(2 * r, d)
        self.gate = nn.Linear(2 * d, 1 if gate_form == "scalar" else d) if gate else None
        self.out = nn.Linear(d, d) if extra_proj else None
        # conv K > 0: the reduction reads u = h + b + sum_k w[:, k] h_{t-k} (a padded position reads as 0)
        self.conv = _CausalDWConv(d, int(conv)) if conv else None
        self.mix = None  # the logits of a softmax over the partners, in place of their mean
        if offset_mix == "learned":
            self.mix = _OffsetMix(len(self.offsets))
        elif offset_mix == "token":
            self.mix = nn.Linear(d, len(self.offsets))
            nn.init.zeros_(self.mix.weight)
            nn.init.zeros_(self.mix.bias)
        iu = torch.triu_indices(rh, rh, 1) if self.use_plucker else torch.zeros(2, 0, dtype=torch.long)
        self.register_buffer("pair_i", iu[0].clone(), persistent=False)  # pairs i<j of one head, row-major
        self.register_buffer("pair_j", iu[1].clone(), persistent=False)

    def forward(self, h, mask=None):
        """h (B, T, d); mask (B, T) bool, True = a real position (None: all real). Token t is paired with
        t - D for each offset D (and with t + D when bidirectional) where that partner is in the sequence
        and real; each pair's normalised Pluecker vector, oriented from the later token to the earlier,
        is projected and the projections averaged."""
        B, T, d = h.shape
        real = torch.ones(B, T, dtype=torch.bool, device=h.device) if mask is None else mask.bool()
        u = h
        if self.conv is not None:  # causal: K - 1 zeros before the first position
            K = self.conv.weight.shape[-1]
            hs = (h * real[..., None].to(h.dtype)).transpose(1, 2)
            w = self.conv.weight.flip(-1)[:, None, :]  # column k multiplies h_{t-k}
            u = h + F.conv1d(F.pad(hs, (K - 1, 0)), w, self.conv.bias, groups=d).transpose(1, 2)
        z = self.red(u).reshape(B, T, self.heads, self.r // self.heads)  # (B, T, H, r/H)
        acc = h.new_zeros(B, T, d)
        cnt = h.new_zeros(B, T)
        i, j = self.pair_i, self.pair_j
        steps = [-D for D in self.offsets] + ([D for D in self.offsets] if self.bidirectional else [])
        logits = None if self.mix is None else self.mix(h)  # (B, T, n_offsets), or (n_offsets) when learned
        for k, s in enumerate(steps):  # mean over the list entries (a repeated offset counts repeatedly)
            if abs(s) >= T:
                continue  # no position has a partner s away
            t0, t1 = max(0, -s), min(T, T - s)  # positions t whose partner t + s is inside the sequence
            zt = z[:, t0:t1, :]
            zp = z[:, t0 + s:t1 + s, :]
            ok = real[:, t0 + s:t1 + s].to(h.dtype)[..., None]  # a padded partner is no partner
            if self.window > 0:  # a partner in another window is no partner
                pos = torch.arange(t0, t1)
                ok = ok * ((pos + s) // self.window == pos // self.window).to(h.dtype)[None, :, None]
            if self.grid > 0:  # offset D is the step (dr, dc), D = dr grid + dc, -grid/2 < dc <= grid/2
                G, c = self.grid, abs(s) % self.grid
                dc = (c - G if c > G // 2 else c) * (1 if s > 0 else -1)
                col = torch.arange(t0, t1) % G + dc
                ok = ok * ((col >= 0) & (col < G)).to(h.dtype)[None, :, None]
            if not self.use_plucker:  # the pair as [z_later; z_earlier] (heads is 1)
                later, earlier = (zt, zp) if s < 0 else (zp, zt)
                gD = self.pair(torch.cat([later.flatten(-2), earlier.flatten(-2)], dim=-1)) * ok
                acc = acc + F.pad(gD, (0, 0, t0, T - t1))
                cnt = cnt + F.pad(ok[..., 0], (t0, T - t1))
                continue
            p = zt[..., i] * zp[..., j] - zt[..., j] * zp[..., i]  # (B, n, H, C/H): each head on its own
            nrm = torch.linalg.norm(p, dim=-1, keepdim=True)
            phat = p / torch.clamp_min(nrm, self.eps)
            # a partner identical to the token (same token at offset D in layer 0 with pos "none"): p is 0
            # for every parameter value, so the pair contributes 0 and passes no gradient (docs/model.md)
            same = (zt == zp).all(dim=-1, keepdim=True)
            phat = torch.where(same, torch.zeros_like(phat), phat).flatten(-2)  # (B, n, C), head-major
            if s > 0:  # pairs are oriented from the later token to the earlier: p(z_{t+D}, z_t) = -p(z_t, z_{t+D})
                phat = -phat
            if logits is not None:  # a weighted mean: weight exp(l_D) over the partners that exist
                lk = logits[..., k % len(self.offsets)]
                ok = ok * torch.exp(lk[:, t0:t1, None] if lk.dim() else lk)
            gD = self.plucker(phat) * ok  # project each pair, then average
            acc = acc + F.pad(gD, (0, 0, t0, T - t1))
            cnt = cnt + F.pad(ok[..., 0], (t0, T - t1))
        # positions without a partner: acc is exactly 0 there, so g = 0 (not the bias)
        g = acc / torch.where(cnt > 0, cnt, torch.ones_like(cnt))[..., None]
        if self.gate is None:  # the ablation without the gate
            m = (h + g) / 2.0
        else:
            a = torch.sigmoid(self.gate(torch.cat([h, g], dim=-1)))
            m = a * h + (1.0 - a) * g
        if self.out is not None:
            m = self.out(m)
        return m


class SelfAttention(nn.Module):
    def __init__(self, d, n_head, causal=True):
        super().__init__()
        self.n_head = n_head
        self.causal = causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, h, mask=None, qkv=None):
        """Causal (key <= query) or bidirectional; padded keys (mask False) are seen by nobody. A query
        that sees no key gets a zero output. qkv: the projections already made (emb-qk's), else qkv(h)."""
        B, T, d = h.shape
        H = self.n_head
        dh = d // H
        q, k, v = (self.qkv(h) if qkv is None else qkv).split(d, dim=-1)
        q = q.reshape(B, T, H, dh).transpose(1, 2)  # head j = columns j*dh:(j+1)*dh
        k = k.reshape(B, T, H, dh).transpose(1, 2)
        v = v.reshape(B, T, H, dh).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(dh)  # (B, H, T, T)
        allowed = self.pattern(T, h.device)[None, None].expand(B, 1, T, T)
        if mask is not None:
            allowed = allowed & mask.bool()[:, None, None, :]
        att = att.masked_fill(~allowed, float("-inf"))
        any_key = allowed.any(dim=-1, keepdim=True)
        att = torch.where(any_key, torch.softmax(torch.where(any_key, att, torch.zeros_like(att)), dim=-1),
                          torch.zeros_like(att))
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        return self.proj(y)


    def pattern(self, T, device):
        """(T, T) bool: query i may see key j (before padding)."""
        allowed = torch.ones(T, T, dtype=torch.bool, device=device)
        return allowed.tril() if self.causal else allowed  # causal: key <= query


CausalSelfAttention = SelfAttention


class TokenMLP(nn.Module):
    """MLP-Mixer's token mixing (src/mixers/token_mlp.c): each channel's column of the sequence through
    fc2(gelu(fc1(.))) along the positions, fc1 = Linear(max_len, hidden), fc2 = Linear(hidden, max_len); a sequence
    of T < max_len positions uses fc1's first T columns and fc2's first T rows. Bidirectional, no padding."""

    def __init__(self, hidden, max_len, bidirectional, pos, gelu):
        super().__init__()
        if not bidirectional or pos != "learned":
            raise ValueError("config: mixer token-mlp needs a bidirectional stack and pos learned")
        self.fc1 = nn.Linear(max_len, hidden)
        self.fc2 = nn.Linear(hidden, max_len)
        self.approx = "tanh" if gelu == "tanh" else "none"

    def forward(self, h, mask=None):
        if mask is not None and not bool(mask.all()):
            raise ValueError("token-mlp: no padding (every position is real)")
        T = h.shape[1]
        x = h.transpose(1, 2)  # (B, d, T): a channel's column of the sequence as a row
        a = F.gelu(F.linear(x, self.fc1.weight[:, :T], self.fc1.bias), approximate=self.approx)
        return F.linear(a, self.fc2.weight[:T], self.fc2.bias[:T]).transpose(1, 2)


class FixedMix(nn.Module):
    """Sequence-independent mixing (src/mixers/fixed_mix.c): head h's weight of key s for query t is a softmax of
    rel[h, t - s] (causal) or rel[h, s - t + S - 1] (bidirectional) over the keys with |t - s| < S, S = span or
    max_len; padded keys excluded; then proj of the weighted values. Dense (T, T) weights here."""

    def __init__(self, d, n_head, span, max_len, causal):
        super().__init__()
        self.n_head, self.causal, self.S = n_head, causal, span or max_len
        self.v = nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.rel = nn.Parameter(torch.zeros(n_head, self.S if causal else 2 * self.S - 1))

    def forward(self, h, mask=None):
        B, T, d = h.shape
        H = self.n_head
        v = self.v(h).reshape(B, T, H, d // H).transpose(1, 2)  # (B, H, T, dh)
        pos = torch.arange(T, device=h.device)
        off = pos[:, None] - pos[None, :]  # t - s
        allowed = off.abs() < self.S
        if self.causal:
            allowed = allowed & (off >= 0)
            idx = off.clamp(0, self.S - 1)
        else:
            idx = (self.S - 1 - off).clamp(0, 2 * self.S - 2)
        allowed = allowed[None, None].expand(B, 1, T, T)
        if mask is not None:
            allowed = allowed & mask.bool()[:, None, None, :]
        att = self.rel[:, idx][None].expand(B, H, T, T).masked_fill(~allowed, float("-inf"))
        any_key = allowed.any(dim=-1, keepdim=True)
        att = torch.where(any_key, torch.softmax(torch.where(any_key, att, torch.zeros_like(att)), dim=-1),
                          torch.zeros_like(att))
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, d))


class AttnForm(SelfAttention):
    """Attention in other forms (src/mixers/attn_form.c): z = q.k / sqrt(dh) over the keys a query sees (n of
    them); relu: relu(z) / n; sigmoid: sigmoid(z - ln n); l1: softmax of -|q - k|_1 / sqrt(dh)."""

    def __init__(self, d, n_head, form, causal=True):
        super().__init__(d, n_head, causal)
        self.form = form

    def forward(self, h, mask=None):
        B, T, d = h.shape
        H = self.n_head
        dh = d // H
        q, k, v = (x.reshape(B, T, H, dh).transpose(1, 2) for x in self.qkv(h).split(d, dim=-1))
        if self.form == "l1":
            z = -(q[:, :, :, None, :] - k[:, :, None, :, :]).abs().sum(-1) / math.sqrt(dh)
        else:
            z = q @ k.transpose(-2, -1) / math.sqrt(dh)
        allowed = self.pattern(T, h.device)[None, None].expand(B, 1, T, T)
        if mask is not None:
            allowed = allowed & mask.bool()[:, None, None, :]
        n = allowed.sum(-1, keepdim=True).clamp(min=1).to(z.dtype)
        if self.form == "l1":
            att = torch.softmax(z.masked_fill(~allowed, float("-inf")), dim=-1)
            att = torch.where(allowed.any(-1, keepdim=True), att, torch.zeros_like(att))
        elif self.form == "relu":
            att = torch.relu(z) / n
        else:
            att = torch.sigmoid(z - torch.log(n))
        att = att.masked_fill(~allowed, 0.0)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, d))


class EmbQK(SelfAttention):
    """Attention with q and k from the model's input embeddings (self.emb, set by the model before the block
    runs) through a LayerNorm without weight or bias, and v from the layer's input (src/mixers/emb_qk.c):
    attention's tensors, qkv's rows q | k | v."""
    reads_embeddings = True

    def __init__(self, d, n_head, eps, causal=True):
        super().__init__(d, n_head, causal)
        self.eps = eps

    def forward(self, h, mask=None):
        d = h.shape[-1]
        w, b = self.qkv.weight, self.qkv.bias
        e = F.layer_norm(self.emb, (d,), eps=self.eps)
        qkv = torch.cat([F.linear(e, w[:2 * d], b[:2 * d]), F.linear(h, w[2 * d:], b[2 * d:])], dim=-1)
        return super().forward(h, mask, qkv=qkv)


class LinformerAttention(nn.Module):
    """Linformer (Wang et al. 2020): keys and values projected along the sequence, K' = E[:, :T] K and
    V' = F[:, :T] V, E and F (k_proj, max_len) shared by the heads; each query attends to the k_proj projected
    keys of its head. Padded positions' keys and values are 0 before the projection. Bidirectional only."""

    def __init__(self, d, n_head, k_proj, max_len, bidirectional, pos):
        super().__init__()
        if not bidirectional:
            raise ValueError("config: mixer linformer cannot run causally: each projected key mixes every position, "
                             "so the past would see the future")
        if pos != "learned" or k_proj > max_len:
            raise ValueError("config: linformer needs pos learned and k_proj <= max_len (k_proj %d, max_len %d, pos %s)"
                             % (k_proj, max_len, pos))
        if d % n_head != 0:
            raise ValueError("config: d_model must be divisible by n_head")
        self.n_head = n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.E = nn.Parameter(torch.randn(k_proj, max_len) * 0.02)
        self.F = nn.Parameter(torch.randn(k_proj, max_len) * 0.02)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # the checkpoint's order: qkv and proj (the attention family's tensors) before E and F, whereas a module
        # lists its own parameters before its children's; the children rewrite these keys in place
        for name in ("qkv.weight", "qkv.bias", "proj.weight", "proj.bias"):
            t = self.get_parameter(name)
            destination[prefix + name] = t if keep_vars else t.detach()
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def forward(self, h, mask=None):
        B, T, d = h.shape
        H, K = self.n_head, self.E.shape[0]
        dh = d // H
        if T > self.E.shape[1]:
            raise ValueError("sequence length %d > max_len %d (linformer's E and F)" % (T, self.E.shape[1]))
        q, k, v = self.qkv(h).split(d, dim=-1)
        if mask is not None:  # padded keys and values: exactly 0
            real = mask.bool()[..., None]
            k = torch.where(real, k, torch.zeros_like(k))
            v = torch.where(real, v, torch.zeros_like(v))
        kp = (self.E[:, :T] @ k).reshape(B, K, H, dh).transpose(1, 2)  # (B, H, K, dh)
        vp = (self.F[:, :T] @ v).reshape(B, K, H, dh).transpose(1, 2)
        q = q.reshape(B, T, H, dh).transpose(1, 2)
        att = torch.softmax(q @ kp.transpose(-2, -1) / math.sqrt(dh), dim=-1)  # (B, H, T, K)
        y = (att @ vp).transpose(1, 2).reshape(B, T, d)
        return self.proj(y)


class WindowAttention(SelfAttention):
    """Sliding-window attention with global tokens (Longformer): SelfAttention's tensors and math, each query
    seeing only causal: j <= i and (i - j < window or j < n_global); bidirectional: |i - j| < window or
    j < n_global or i < n_global (the global positions see every key)."""

    def __init__(self, d, n_head, window, n_global, causal=True):
        super().__init__(d, n_head, causal)
        self.window = window
        self.n_global = n_global

    def pattern(self, T, device):
        i = torch.arange(T, device=device)[:, None]
        j = torch.arange(T, device=device)[None, :]
        glob_key, glob_query = j < self.n_global, i < self.n_global
        if self.causal:
            return (j <= i) & ((i - j < self.window) | glob_key)
        return ((i - j).abs() < self.window) | glob_key | glob_query


def _omega_last(module, state_dict, prefix, local_metadata):
    """state_dict hook: omega after qkv and proj, the checkpoint's order (own buffers come first otherwise)."""
    state_dict.move_to_end(prefix + "omega")


class Performer(nn.Module):
    """FAVOR+ attention with positive random features (docs/model.md, "Performer"): the attention mixer's
    qkv and proj, and omega (m, dh), a buffer shared by the heads that the C engine draws and this module
    reads from the checkpoint. phi(x) = exp(omega x - |x|^2/2) / sqrt(m) on x = q / dh^(1/4) and
    k / dh^(1/4), computed with the documented constants that cancel in the ratio (s_i on the keys' side and
    back on the queries', the queries' maximum, the 1/sqrt(m)); a query whose den is not above 2^-126 (it sees
    no key) gets 0 and passes no gradient. Padded keys are
    left out of both sums. The causal form is written with a (T, T) lower triangle, for clarity."""
    KEY_BOUND = 40.0
    DEN_MIN = 2.0 ** -126

    def __init__(self, d, n_head, features, causal=True):
        super().__init__()
        self.n_head = n_head
        self.causal = causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("omega", torch.zeros(features, d // n_head))
        self._register_state_dict_hook(_omega_last)

    def forward(self, h, mask=None):
        B, T, d = h.shape
        H = self.n_head
        dh = d // H
        q, k, v = (t.reshape(B, T, H, dh).transpose(1, 2) for t in self.qkv(h).split(d, dim=-1))
        c = dh ** -0.25
        w = self.omega.to(h.dtype)
        s = (0.5 * (w * w).sum(-1) - self.KEY_BOUND).clamp_min(0.0)  # (m): a key feature is <= e^KEY_BOUND
        uq = (c * q) @ w.t() + s
        fq = torch.exp(uq - uq.amax(-1, keepdim=True).detach())  # (B, H, T, m), the largest 1
        xk = c * k
        fk = torch.exp(xk @ w.t() - 0.5 * (xk * xk).sum(-1, keepdim=True) - s)
        if mask is not None:
            fk = fk * mask.to(fk.dtype)[:, None, :, None]
        if self.causal:
            a = (fq @ fk.transpose(-2, -1)).tril()  # key <= query
            num, den = a @ v, a.sum(-1, keepdim=True)
        else:
            num, den = fq @ (fk.transpose(-2, -1) @ v), fq @ fk.sum(-2).unsqueeze(-1)
        y = torch.where(den > self.DEN_MIN, num / den.clamp_min(self.DEN_MIN), torch.zeros_like(num))
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


class GRUMixer(nn.Module):
    """The gru mixer (src/mixers/gru.c): torch.nn.GRU itself, causal with d units or bidirectional with d / 2
    each way (outputs concatenated), its tensors under nn.GRU's names (mix.gru.weight_ih_l0, ...). A padded
    position passes the state on unchanged and outputs it: with a mask the recurrence runs one position at
    a time through PyTorch's own GRU cell (torch.gru_cell, the op nn.GRUCell calls) on nn.GRU's tensors,
    holding the state where the mask is False. Without one it is a single nn.GRU call."""

    def __init__(self, d, bidirectional=False):
        super().__init__()
        if bidirectional and d % 2:
            raise ValueError("a bidirectional gru needs an even width, not %d" % d)
        self.gru = nn.GRU(d, d // 2 if bidirectional else d, batch_first=True, bidirectional=bidirectional)

    def _direction(self, h, mask, suffix, reverse):
        g = self.gru
        w = [getattr(g, n + "_l0" + suffix) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        B, T, _ = h.shape
        state = h.new_zeros(B, g.hidden_size)
        out = [None] * T
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            new = torch.gru_cell(h[:, t], state, *w)
            state = torch.where(mask[:, t, None], new, state)
            out[t] = state
        return torch.stack(out, 1)

    def forward(self, h, mask=None):
        if mask is None:
            return self.gru(h)[0]
        outs = [self._direction(h, mask, "", False)]
        if self.gru.bidirectional:
            outs.append(self._direction(h, mask, "_reverse", True))
        return torch.cat(outs, -1)


class AdditiveScore(nn.Module):
    """The additive score's tensors: weight (d, 2d) = [W1 | W2] (W1 on the query, W2 on the memory) and v (d)."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d, 2 * d))
        self.v = nn.Parameter(torch.empty(d))


class GRUAttnMixer(nn.Module):
    """The gru-attn mixer (src/mixers/gru_attn.c): a GRU decoder reading the encoder's output itself, step by step
    through torch.gru_cell on nn.GRU's tensors: attention none (the last encoder state as the one context),
    bahdanau (additive, from s_{t-1}, the context fed in), or Luong's dot, general, concat (from s_t), with or
    without input feeding; out_t = tanh(out([c_t; s_t])). Block sets .mem = (M, mask) before each forward. A
    padded target position keeps s and out."""
    reads_memory = True

    def __init__(self, d, attention, input_feeding):
        super().__init__()
        self.att, self.d = attention, d
        self.feed = attention not in ("none", "bahdanau") and input_feeding  # Luong's input feeding
        self.gru = nn.GRU(d if attention not in ("none", "bahdanau") and not input_feeding else 2 * d, d,
                          batch_first=True)
        self.out = nn.Linear(2 * d, d)
        if attention == "general":
            self.score = nn.Linear(d, d, bias=False)
        elif attention in ("bahdanau", "concat"):
            self.score = AdditiveScore(d)
        self.mem = None

    def attend(self, q, M, mmask):
        d = self.d
        if self.att == "dot":
            e = (M @ q[:, :, None]).squeeze(-1)
        elif self.att == "general":
            e = (self.score(M) @ q[:, :, None]).squeeze(-1)  # q . (Wa M_j)
        else:
            W = self.score.weight
            e = torch.tanh((q @ W[:, :d].t())[:, None, :] + M @ W[:, d:].t()) @ self.score.v
        if mmask is not None:
            e = e.masked_fill(~mmask, float("-inf"))
        return (torch.softmax(e, -1)[:, :, None] * M).sum(1)

    def forward(self, x, mask=None):
        M, mmask = self.mem
        B, T, d = x.shape
        g = self.gru
        w = (g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0, g.bias_hh_l0)
        s, o = x.new_zeros(B, d), x.new_zeros(B, d)
        if self.att == "none":  # the last real source position's row
            last = (mmask.long().cumsum(1).argmax(1) if mmask is not None else torch.full((B,), M.shape[1] - 1))
            c = M[torch.arange(B), last]
        outs = []
        for t in range(T):
            if self.att == "bahdanau":
                c = self.attend(s, M, mmask)
            if self.att in ("none", "bahdanau"):
                inp = torch.cat([x[:, t], c], -1)
            else:
                inp = torch.cat([x[:, t], o], -1) if self.feed else x[:, t]
            s_new = torch.gru_cell(inp, s, *w)
            if self.att not in ("none", "bahdanau"):
                c = self.attend(s_new, M, mmask)
            o_new = torch.tanh(self.out(torch.cat([c, s_new], -1)))
            keep = mask[:, t, None] if mask is not None else torch.ones(B, 1, dtype=torch.bool)
            s, o = torch.where(keep, s_new, s), torch.where(keep, o_new, o)
            outs.append(o)
        return torch.stack(outs, 1)


# The mixers by config name: how a layer's entry builds one (d, the layer's keys with their defaults, whether
# the stack is bidirectional, the stack's keys) and whether its output holds the skip path (post-norm blocks;
# src/mixers' gated_skip). MIXER_DEFAULTS (above) has each one's keys. A new mixer is a class and a line here.
MIXERS = {
    "grassmann": {"gated_skip": True,
                  "build": lambda d, lc, bidir, st: GrassmannMixer(
                      d, lc["rank"], lc["offsets"], lc["plucker_eps"], bool(lc["extra_proj"]), bidirectional=bidir,
                      window=lc.get("window", 0), heads=lc.get("heads", 1), plucker=lc.get("plucker", True),
                      gate=lc.get("gate", True), grid=lc.get("grid", 0), conv=lc.get("conv", 0),
                      gate_form=lc.get("gate_form", "channel"), offset_mix=lc.get("offset_mix", "mean"))},
    "attention": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: SelfAttention(d, lc["n_head"], causal=not bidir)},
    "linformer": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: LinformerAttention(d, lc["n_head"], lc["k_proj"], st["max_len"],
                                                                       bidir, st["pos"])},
    "window": {"gated_skip": False,
               "build": lambda d, lc, bidir, st: WindowAttention(d, lc["n_head"], lc["window"], lc["n_global"],
                                                                 causal=not bidir)},
    "performer": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: Performer(d, lc["n_head"], lc["features"], causal=not bidir)},
    "gru": {"gated_skip": False, "build": lambda d, lc, bidir, st: GRUMixer(d, bidirectional=bidir)},
    "gru-attn": {"gated_skip": False,
                 "build": lambda d, lc, bidir, st: GRUAttnMixer(d, lc["attention"], lc["input_feeding"])},
    "token-mlp": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: TokenMLP(lc["hidden"], st["max_len"], bidir, st["pos"], st["gelu"])},
    "fixed-mix": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: FixedMix(d, lc["n_head"], lc["span"], st["max_len"], not bidir)},
    "emb-qk": {"gated_skip": False, "build": lambda d, lc, bidir, st: EmbQK(d, lc["n_head"], st["ln_eps"], causal=not bidir)},
    "attn-form": {"gated_skip": False,
                  "build": lambda d, lc, bidir, st: AttnForm(d, lc["n_head"], lc["form"], causal=not bidir)},
}


class CrossAttention(nn.Module):
    """An encoder-decoder's cross op (src/model/block.c, BOP_CROSS): queries from the decoder's rows, keys and
    values from the memory (the encoder's output), heads of d / n_head, padded source positions seen by none."""

    def __init__(self, d, n_head):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))
        self.n_head = n_head

    def forward(self, x, mem, mem_mask):
        (B, T, d), S, H = x.shape, mem.shape[1], self.n_head
        q = self.q(x).view(B, T, H, d // H).transpose(1, 2)
        k = self.k(mem).view(B, S, H, d // H).transpose(1, 2)
        v = self.v(mem).view(B, S, H, d // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // H)
        if mem_mask is not None:
            att = att.masked_fill(~mem_mask.bool()[:, None, None, :], float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, d))


class FFN(nn.Module):
    def __init__(self, d, d_ff, gelu):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)
        self.approx = "tanh" if gelu == "tanh" else "none"

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approx))


def _pre(b, h, mask):
    h = h + b.drop_mix(b.mix(b.ln1(h), mask))
    return h + b.drop_ffn(b.ffn(b.ln2(h)))


def _post_gated(b, h, mask):  # the paper's block: the gate is the skip path
    x = b.drop_mix(b.ln1(b.mix(h, mask)))
    return b.ln2(x + b.drop_ffn(b.ffn(x)))


def _post_residual(b, h, mask):
    x = b.ln1(h + b.drop_mix(b.mix(h, mask)))
    return b.ln2(x + b.drop_ffn(b.ffn(x)))


def _pre_mix_norm(b, h, mask):  # alphaXiv's: a LayerNorm (ln3) on the mixer's output, inside the residual
    h = h + b.drop_mix(b.ln3(b.mix(b.ln1(h), mask)))
    return h + b.drop_ffn(b.ffn(b.ln2(h)))


def _decoder_pre(b, h, mask, mem):
    h = h + b.drop_mix(b.mix(b.ln1(h), mask))
    h = h + b.drop_cross(b.cross(b.ln2(h), *mem))
    return h + b.drop_ffn(b.ffn(b.ln3(h)))


def _decoder_post(b, h, mask, mem):
    x = b.ln1(h + b.drop_mix(b.mix(h, mask)))
    y = b.ln2(x + b.drop_cross(b.cross(x, *mem)))
    return b.ln3(y + b.drop_ffn(b.ffn(y)))


def _decoder_post_gated(b, h, mask, mem):
    x = b.drop_mix(b.ln1(b.mix(h, mask)))
    y = b.ln2(x + b.drop_cross(b.cross(x, *mem)))
    return b.ln3(y + b.drop_ffn(b.ffn(y)))


# An encoder-decoder's decoder kinds: three LayerNorms, a cross op (cross) between the mixer and the FFN, its
# dropout site 1 (drop_cross; the FFN's is then site 2); their forward also takes the memory (x, mask).
DECODER_BLOCKS = {"decoder-pre": _decoder_pre, "decoder-post": _decoder_post,
                  "decoder-post-gated": _decoder_post_gated}

# The block kinds by name (src/model/block.c): how many LayerNorms (ln1, ln2, ...) and its forward over a Block's
# modules (drop_mix is dropout site 0, drop_ffn site 1). A layer's "block" names one; without it, its stack's norm
# and its mixer choose. A new kind is a function and register_block (tests/parity/torch_ref/block_parallel.py).
BLOCKS = {"pre": (2, _pre), "post-gated": (2, _post_gated), "post-residual": (2, _post_residual),
          "pre-mix-norm": (3, _pre_mix_norm)}
BLOCKS.update({k: (3, f) for k, f in DECODER_BLOCKS.items()})


def register_block(name, n_ln, forward):
    BLOCKS[name] = (n_ln, forward)
    config_schema.BLOCK_KINDS.add(name)


class Block(nn.Module):
    def __init__(self, cfg, layer, eps, cross_heads=0):
        """cfg: the stack's keys (d_model, d_ff, norm, direction, gelu, dropout, layers); eps: the model's
        ln_eps; cross_heads: an encoder-decoder's decoder block's (0: any other block)."""
        super().__init__()
        d = cfg["d_model"]
        lc = cfg["layers"][layer]
        self.kind = lc["mixer"]
        default = "pre" if cfg["norm"] == "pre" else "post-gated" if MIXERS[self.kind]["gated_skip"] else "post-residual"
        if cross_heads and lc["mixer"] not in config_schema.MEMORY_MIXERS:  # a mixer that reads it needs no cross op
            default = "decoder-" + default.replace("-residual", "")
        name = lc.get("block") or default
        n_ln, self.run = BLOCKS[name]
        for i in range(n_ln):  # the names are the checkpoint's: ln1, ln2, ...
            setattr(self, "ln%d" % (i + 1), nn.LayerNorm(d, eps=eps))
        self.mix = MIXERS[self.kind]["build"](d, lc, cfg["direction"] == "bidirectional", cfg)
        self.has_cross = name in DECODER_BLOCKS
        if name in DECODER_BLOCKS:
            self.cross = CrossAttention(d, cross_heads)
            self.drop_cross = nn.Dropout(cfg["dropout"])
        self.ffn = FFN(d, cfg["d_ff"], cfg["gelu"])
        self.drop_mix = nn.Dropout(cfg["dropout"])
        self.drop_ffn = nn.Dropout(cfg["dropout"])

    def forward(self, h, mask=None, mem=None):
        if getattr(self.mix, "reads_memory", False):
            self.mix.mem = mem
        return self.run(self, h, mask, mem) if self.has_cross else self.run(self, h, mask)


class GrassflowModel(nn.Module):
    """input (token embedding, or a projection of vectors) + positions -> blocks -> ln_f -> head:
    lm: logits (B, T, V) over the vocabulary; classify: pool (mean over real positions, the first or the last)
    then a linear layer, logits (B, n_classes)."""

    def __init__(self, cfg, src="config"):
        super().__init__()
        norm = normalize_config(cfg, src)
        self.cfg_in = dict(cfg)  # as given (grassflow.torch.save stores it)
        cfg = norm
        self.cfg = cfg
        V, d = cfg["vocab_size"], cfg["d_model"]
        eps = cfg["ln_eps"]
        # registration order = checkpoint order
        self.encdec = cfg["source_vocab"] > 0
        if self.encdec:  # an encoder-decoder: the source's embedding and positions, the encoder, enc_ln
            self.src_emb = nn.Embedding(cfg["source_vocab"], d)
            self.src_pos = nn.Embedding(cfg["max_len"], d) if cfg["pos"] == "learned" else None
            self.blocks = nn.ModuleList([Block(cfg, l, eps) for l in range(cfg["n_layer"])])
            self.enc_ln = nn.LayerNorm(d, eps=eps) if cfg["norm"] == "pre" else None
        if cfg["input"] == "tokens":
            self.tok_emb = nn.Embedding(V, d)
        else:
            self.tok_emb = None
            self.in_proj = nn.Linear(cfg["d_input"], d)
        self.pos_kind = cfg["pos"]
        # sinusoidal: computed for each forward's length (max_len may be 2^24: no table of that many rows)
        self.pos_emb = nn.Embedding(cfg["max_len"], d) if cfg["pos"] == "learned" else None
        # token types (BERT's segments): one learned row per type, added to the token embedding
        self.seg_emb = nn.Embedding(cfg["segments"], d) if cfg["segments"] > 0 else None
        # emb_norm: BERT's LayerNorm on the embedding sum
        self.emb_ln = nn.LayerNorm(d, eps=cfg["ln_eps"]) if cfg["emb_norm"] else None
        if not self.encdec:
            self.blocks = nn.ModuleList([Block(cfg, l, eps) for l in range(cfg["n_layer"])])
        # further stacks: NAME.in_proj (from the previous width), NAME.blocks.J
        self.stack_names = []
        for st in cfg["stacks"]:
            if hasattr(self, st["name"]) or st["name"] in ("lm_head", "cls_head"):  # cfg, forward, pool, ...
                raise ValueError("%s: \"stacks\" has one named \"%s\", a name the PyTorch module uses for its own "
                                 "attribute; this module cannot hold it" % (src, st["name"]))
            mod = nn.Module()
            if not self.encdec:  # a decoder reads the target's embedding, and the encoder through its cross ops
                mod.in_proj = nn.Linear(d if not self.stack_names else cfg["stacks"][len(self.stack_names) - 1]["d_model"],
                                        st["d_model"])
            mod.blocks = nn.ModuleList([Block(st, l, eps, cfg["cross_heads"] if self.encdec else 0)
                                        for l in range(st["n_layer"])])
            self.add_module(st["name"], mod)
            self.stack_names.append(st["name"])
        d = cfg["stacks"][-1]["d_model"] if cfg["stacks"] else d
        self.ln_f = nn.LayerNorm(d, eps=eps)
        self.lm_head = None
        if cfg["task"] == "lm" and not cfg["tie_head"]:
            self.lm_head = nn.Linear(d, V, bias=False)
        if cfg["task"] == "classify":
            # pool "pair": InferSent's features [u; v; |u - v|; u * v] of the two segments' means, 4d wide
            self.cls_head = nn.Linear(d * (4 if cfg["head"]["pool"] == "pair" else 1), cfg["head"]["n_classes"])

    def embed(self, inputs, segments=None):
        B, T = inputs.shape[:2]
        if T > self.cfg["max_len"] and self.pos_kind == "learned":
            raise ValueError("sequence length %d > max_len %d" % (T, self.cfg["max_len"]))
        h = self.tok_emb(inputs) if self.tok_emb is not None else self.in_proj(inputs)
        if self.pos_kind == "learned":
            h = h + self.pos_emb.weight[:T][None]
        elif self.pos_kind in ("sinusoidal", "sinusoidal-2d"):
            h = h + position_table(self.pos_kind, T, h.shape[-1], self.cfg["pos_grid"]).to(h.device, h.dtype)[None]
        if self.seg_emb is not None:
            h = h + self.seg_emb(torch.zeros(B, T, dtype=torch.long) if segments is None else segments)
        return self.emb_ln(h) if self.emb_ln is not None else h

    def pool(self, h, mask, segments=None):
        if self.cfg["head"]["pool"] == "pair":  # the means over segment 0's and 1's real positions (0 if none)
            w = torch.ones(h.shape[:2], dtype=h.dtype) if mask is None else mask.to(h.dtype)
            s1 = torch.zeros(h.shape[:2], dtype=h.dtype) if segments is None else (segments == 1).to(h.dtype)
            u, v = [(h * (w * s)[..., None]).sum(1) / torch.clamp_min((w * s).sum(1), 1.0)[:, None]
                    for s in (1 - s1, s1)]
            return torch.cat([u, v, (u - v).abs(), u * v], -1)
        if self.cfg["head"]["pool"] == "first":  # the first real position
            idx = torch.zeros(h.shape[0], dtype=torch.long) if mask is None else mask.int().argmax(1)
            return h[torch.arange(h.shape[0]), idx]
        if self.cfg["head"]["pool"] == "last":  # the last real position
            T = h.shape[1]
            idx = torch.full((h.shape[0],), T - 1, dtype=torch.long) if mask is None else \
                T - 1 - mask.int().flip(1).argmax(1)
            return h[torch.arange(h.shape[0]), idx]
        w = torch.ones(h.shape[:2], dtype=h.dtype) if mask is None else mask.to(h.dtype)
        return (h * w[..., None]).sum(1) / torch.clamp_min(w.sum(1), 1.0)[:, None]

    def encode(self, source, source_mask=None):
        """An encoder-decoder's memory: the encoder over source (B, S) ids, through enc_ln when it has one."""
        S = source.shape[1]
        if S > self.cfg["max_len"] and self.pos_kind == "learned":
            raise ValueError("source length %d > max_len %d" % (S, self.cfg["max_len"]))
        h = self.src_emb(source)
        if self.pos_kind == "learned":
            h = h + self.src_pos.weight[:S][None]
        elif self.pos_kind in ("sinusoidal", "sinusoidal-2d"):
            h = h + position_table(self.pos_kind, S, h.shape[-1], self.cfg["pos_grid"]).to(h.device, h.dtype)[None]
        for blk in self.blocks:
            h = blk(h, source_mask)
        return self.enc_ln(h) if self.enc_ln is not None else h

    def forward(self, inputs, mask=None, segments=None, source=None, source_mask=None):
        """inputs: (B, T) token ids or (B, T, d_input) vectors; mask (B, T), True = real, or None;
        segments (B, T) token types, or None (all 0); an encoder-decoder's source (B, S) ids and its mask."""
        if self.encdec:
            mem = (self.encode(source, source_mask), source_mask)
            h = self.embed(inputs)
            for blk in getattr(self, self.stack_names[0]).blocks:
                h = blk(h, mask, mem)
            W = self.tok_emb.weight if self.lm_head is None else self.lm_head.weight
            return F.linear(self.ln_f(h), W)
        h = emb = self.embed(inputs, segments)
        for blk in self.blocks:
            if getattr(blk.mix, "reads_embeddings", False):  # emb-qk: the input embeddings, beside h
                blk.mix.emb = emb
            h = blk(h, mask)
        for name in self.stack_names:
            st = getattr(self, name)
            h = st.in_proj(h)
            for blk in st.blocks:
                h = blk(h, mask)
        h = self.ln_f(h)
        if self.cfg["task"] == "classify":
            return self.cls_head(self.pool(h, mask, segments))
        W = self.tok_emb.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(h, W)


GrassflowLM = GrassflowModel


def build_model(cfg):
    return GrassflowModel(cfg)


def expected_shapes(cfg):
    """Ordered list of (name, shape) of docs/model.md for cfg."""
    return [(k, tuple(v.shape)) for k, v in build_model(cfg).state_dict().items()]


def load_state_strict(model, tensors):
    """Load numpy tensors into model, failing with a clear message on any mismatch (the C loader's words)."""
    sd = model.state_dict()
    for k, v in sd.items():
        if k not in tensors:
            raise ValueError("tensor \"%s\" is missing (the config says the model has it)" % k)
        if tuple(tensors[k].shape) != tuple(v.shape):
            raise ValueError("tensor \"%s\" should be of shape %s for this config, but it is of shape %s"
                             % (k, tuple(v.shape), tuple(tensors[k].shape)))
    for k in tensors:
        if k not in sd:
            raise ValueError("unexpected tensor \"%s\" that the config's model does not have" % k)
    dtype = next(iter(sd.values())).dtype
    model.load_state_dict({k: torch.from_numpy(np.array(tensors[k], copy=True)).to(dtype) for k in sd}, strict=True)


def load_checkpoint(path):
    """Read a grassflow checkpoint -> (float64 model in eval mode, config string as read), with the C loader's
    checks (grassflow.torch_checkpoint)."""
    from . import torch_checkpoint
    cfg, tensors, meta = torch_checkpoint.read(path)
    model = build_model(cfg).double()
    load_state_strict(model, tensors)
    model.eval()
    return model, meta["config"]

#!/usr/bin/env python3
"""Checks one training step of mare's relation models against an independent PyTorch peer.

The peer (../shared/peers/models.py, loaded at run time, never copied) was written from
SPEC.md without reading mare. For each case this script

  1. runs `mare inspect step` (one training step at step 0 in training mode, dropout off:
     parameters, batch, loss and every parameter's gradient, as NPY files;
     experiments/inspect_step.h) on a batch of a real corpus (BioCreative V CDR as shipped,
     --data cdr; any mare data source is taken), whose documents have different lengths,
     so every batch is padded;
  2. builds the peer with the same configuration, loads mare's weights into it through an
     explicit name mapping (`mapping` below: transposes, convolution layouts, the fused
     q/k/v projection, the bi-affine's layout), feeds it the same batch, computes the loss
     in float64 and backpropagates; and once more in float32, to measure how far float32
     arithmetic alone lands from the float64 result on this step;
  3. compares the loss, every parameter's gradient and the batch-norm running statistics
     after the step, tensor by tensor:
         err = max |mare - peer64| / max(max |peer64|, FLOOR x the step's largest gradient)
     and passes a tensor when err <= TOLERANCE, or err <= SLACK x the float32 peer's own
     err (a ReLU, ReLU6 or halting decision near its threshold moves a gradient by more
     than TOLERANCE in any float32 implementation). A gradient that is zero in exact
     arithmetic (a bias right before a batch norm; the NER head on an RE step) must be
     below TOLERANCE x NOISE x the step's largest gradient. A parameter of one side without
     a counterpart on the other is reported with its gradient's size; one of mare's
     without a counterpart fails the check.

Known differences the check accounts for (the same function either way; each is handled
where it is named):
  * attention: the peer's q/k/v/out projections have biases, mare's have none. The peer's
    are set to zero and reported as peer-only parameters.
  * inverted residual: the peer's expand/project C1 layers have biases, mare's have none
    (a batch norm follows each, so a bias changes nothing). Zero, reported.
  * NTCRE: the peer's W_r has a bias, mare's has none (nu carries one). Zero, reported.
  * BRAN's input: the peer adds a learned position table to the raw embeddings; mare adds
    the fixed sinusoidal signal to embeddings scaled by sqrt(d) (`embed_scale`,
    models/registry.cpp; SPEC 4.2 says only s_i = word_i + position_i). The peer's table
    is loaded with mare's signal (positions from 0) and reported as peer-only; its word
    and entity-tag tables are loaded with sqrt(d) x mare's, and their gradients compared
    after the chain rule (x sqrt(d)).
  * entity tags: mare's input vocabulary puts <pad> at 0 (tag = NER class + 1); the peer
    indexes the NER classes. mare's rows 1.. are the peer's rows; mare's row 0 must get
    no gradient.
  * PoS tags: mare's corpora have none (ReVocabSizes::pos_tags = 0); the peer is built
    without them.
  * running statistics: the batch norms of utre's and ntcre's weight-shared block keep one
    set per iteration in mare, one for all iterations in the peer (`peer_buffers`
    composes mare's sets into the peer's). Only evaluation reads them; a training step's
    numbers are the same.
Not covered: `+norm=layer`. mare's switch makes every norm of utre/ntcre a layer norm
(input, block, transition, heads: models/registry.cpp); the peer's only the blocks'.

Run: /usr/bin/python3 tests/peers/check_models.py --mare build/mare [--peers DIR] [--cases a,b]
Exit status: 0 every case agrees, 1 a difference, 77 skipped (no torch/numpy or no peer).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


try:
    import numpy as np
    import torch
except ImportError as e:  # the ctest entry reports it as skipped
    skip(f"{sys.executable} has no torch/numpy ({e}); install python3-torch")

# label, mare model, task. d 32, 2 heads, 3 iterations, no dropout; the bi-affine starts
# Glorot-uniform so that the step's gradient reaches every layer (from zeros, mare's
# default, it reaches only L). RE steps take the entity tags as input (ner_prob=0); NER
# steps are taken by models that train NER (the default ner_prob), without them.
COMMON = "+d=32+heads=2+dropout=0+biaffine_init=glorot"
CASES = [
    ("bran", "bran+ner_prob=0" + COMMON, "re"),
    ("utre", "utre+ner_prob=0" + COMMON, "re"),
    ("utre+transition", "utre+transition+ner_prob=0" + COMMON, "re"),
    ("utre+ngram", "utre+ngram+ner_prob=0" + COMMON, "re"),
    ("utre+cpd", "utre+cpd+ner_prob=0" + COMMON, "re"),
    ("UTRE-CPD", "UTRE-CPD+ner_prob=0" + COMMON, "re"),
    ("ntcre+cpd", "ntcre+cpd+ner_prob=0" + COMMON, "re"),
    ("NTCRE-CPD", "NTCRE-CPD+ner_prob=0" + COMMON, "re"),
    ("NTCRE-CPD composed", "NTCRE-CPD+memory_step=composed+ner_prob=0" + COMMON, "re"),
    ("bran ner", "bran" + COMMON, "ner"),
    ("UTRE-CPD ner", "UTRE-CPD" + COMMON, "ner"),
    ("NTCRE-CPD ner", "NTCRE-CPD" + COMMON, "ner"),
]
TOLERANCE = 1e-3  # per tensor, relative to its largest entry (mare runs float32)
FLOOR = 1e-6      # x the step's largest gradient: the absolute floor of the denominator
ZERO = 1e-12      # a peer gradient below this x the step's largest is zero up to float64 rounding
NOISE = 1e-2      # mare's gradient of such a tensor must stay below TOLERANCE x NOISE x the largest
                  # (1e-5 of it: a sum of float32 terms that cancel in exact arithmetic keeps
                  # a rounding residue that depends on the summation order, seen at 1.1e-6)
SLACK = 3.0       # or within SLACK x the error of the peer itself run in float32


# ----------------------------------------------------------------- reading mare's dump


def load_step(folder):
    with open(os.path.join(folder, "step.json")) as f:
        index = json.load(f)
    arrays = {}
    for group, entries in index["files"].items():
        arrays[group] = {name: np.load(os.path.join(folder, e["file"])) for name, e in entries.items()}
    return index, arrays


def peer_batch(arrays, task):
    """mare's batch (models/re_batch.h) in the peer's format (models.synthetic_batch)."""
    b = arrays["batch"]
    words, mask = b["words"].astype(np.int64), b["mask"].astype(np.float64)
    B, T = words.shape
    ner = np.maximum(b["ner_targets"].reshape(B, T), 0).astype(np.int64)
    tags = b["entity_tags"].astype(np.int64)
    real = mask > 0
    # the input tag of a real token is its NER class + 1 (experiments/re_data.h)
    assert np.array_equal(tags[real] - 1, ner[real]), "entity tag != NER class + 1"
    out = dict(tokens=torch.from_numpy(words), mask=torch.from_numpy(mask),
               ner_tags=torch.from_numpy(ner), pos_tags=torch.zeros(B, T, dtype=torch.long))
    if "ngrams" in b:
        out["grams"] = torch.from_numpy(b["ngrams"].astype(np.int64).reshape(B, T, -1))
    if task == "re":
        doc = b["pair_doc"].astype(np.int64)
        P = doc.shape[0]
        for side in ("head", "tail"):
            off, rows = b[side + "_offsets"], b[side + "_rows"]
            M = int(max(off[p + 1] - off[p] for p in range(P)))
            idx, msk = np.zeros((P, M), np.int64), np.zeros((P, M))
            for p in range(P):
                r = rows[off[p]:off[p + 1]]
                assert np.all(r // T == doc[p]), "a mention row outside its pair's document"
                idx[p, :len(r)], msk[p, :len(r)] = r % T, 1
            out[side + "_idx"], out[side + "_mask"] = torch.from_numpy(idx), torch.from_numpy(msk)
        out["pair_doc"] = torch.from_numpy(doc)
        out["labels"] = torch.from_numpy(b["labels"].astype(np.int64))
    return out


# ----------------------------------------------------------------- the name mapping
#
# Each of mare's parameters maps to (peer parameter, layout). A layout turns mare's
# array into the peer's (`to`) and the peer's gradient back into mare's layout (`back`).


class Layout:
    def __init__(self, to, back, rows=None):
        self.to, self.back, self.rows = to, back, rows  # rows: a slice of the peer's first axis


SAME = Layout(lambda a: a, lambda g: g)
LINEAR = Layout(lambda a: a.T, lambda g: g.T)                       # [in,out] <-> [out,in]
CONV = Layout(lambda a: a.transpose(2, 1, 0), lambda g: g.transpose(2, 1, 0))  # [K,Ci,Co] <-> [Co,Ci,K]
C1_LINEAR = Layout(lambda a: a[0].T, lambda g: g.T[None])          # [1,Ci,Co] <-> Linear [Co,Ci]
DEPTHWISE = Layout(lambda a: a.T[:, None, :], lambda g: g[:, 0, :].T)  # [K,C] <-> [C,1,K]


def scaled(s):  # peer = s x mare: d loss / d mare = s x d loss / d peer
    return Layout(lambda a: a * s, lambda g: g * s)


def rows_of(start, stop, base=LINEAR):
    return Layout(base.to, base.back, rows=slice(start, stop))


def biaffine(d, C):  # mare [(d+1), C(d+1)] is L[p, l, q]; the peer's is [d+1, C, d+1]
    return Layout(lambda a: a.reshape(d + 1, C, d + 1), lambda g: g.reshape(d + 1, C * (d + 1)))


def tag_rows(scale=1.0):  # mare's row k+1 is the peer's row k (row 0: <pad>)
    return Layout(lambda a: a[1:] * scale, lambda g: g * scale, rows=None)


def norm_map(m, mare, peer):
    m[mare + ".gamma"] = (peer + ".weight", SAME)
    m[mare + ".beta"] = (peer + ".bias", SAME)


def attention_map(m, mare, peer, d):
    for i, part in enumerate("qkv"):
        m[f"{mare}.{part}.w"] = (peer + ".qkv.weight", rows_of(i * d, (i + 1) * d))
    m[mare + ".o.w"] = (peer + ".out.weight", LINEAR)


def linear_map(m, mare, peer, bias=True):
    m[mare + ".w"] = (peer + ".weight", LINEAR)
    if bias:
        m[mare + ".b"] = (peer + ".bias", SAME)


def transition_map(m, mare, peer, inverted):
    if inverted:
        m[mare + ".expand.w"] = (peer + ".expand.weight", C1_LINEAR)
        norm_map(m, mare + ".norm1", peer + ".bn1")
        m[mare + ".depthwise.w"] = (peer + ".dw.weight", DEPTHWISE)
        m[mare + ".depthwise.b"] = (peer + ".dw.bias", SAME)
        norm_map(m, mare + ".norm2", peer + ".bn2")
        m[mare + ".project.w"] = (peer + ".project.weight", C1_LINEAR)
        norm_map(m, mare + ".norm3", peer + ".bn3")
    else:
        m[mare + ".c1a.w"] = (peer + ".c1a.weight", C1_LINEAR)
        m[mare + ".c1a.b"] = (peer + ".c1a.bias", SAME)
        m[mare + ".c5.w"] = (peer + ".c5.weight", CONV)
        m[mare + ".c5.b"] = (peer + ".c5.bias", SAME)
        m[mare + ".c1b.w"] = (peer + ".c1b.weight", C1_LINEAR)
        m[mare + ".c1b.b"] = (peer + ".c1b.bias", SAME)


def mapping(cfg):
    """mare name -> (peer name, Layout) for the model of step.json's config."""
    d, C, base = cfg["d"], cfg["classes"], cfg["base"]
    s = math.sqrt(d) if cfg["embed_scale"] == "sqrt_d" else 1.0
    m = {"embed.word.table": ("word.weight", scaled(s) if s != 1.0 else SAME),
         "embed.entity_tag.table": ("ent_tag.weight", tag_rows(s))}
    if cfg["ngram"]:
        m["embed.ngram.table"] = ("ngram.emb.weight", SAME)
        m["ngram.conv.w"] = ("ngram.conv.weight", CONV)
        m["ngram.conv.b"] = ("ngram.conv.bias", SAME)
        linear_map(m, "ngram.out", "ngram.fc")
    if base == "bran":
        for b in range(cfg["iterations"]):
            attention_map(m, f"block{b}.attention", f"encoder.attn.{b}", d)
            norm_map(m, f"block{b}.norm", f"encoder.norm.{b}")
            transition_map(m, f"block{b}.transition", f"encoder.trans.{b}", False)
    else:
        norm_map(m, "input.norm", "in_norm")
        if base == "utre":
            attention_map(m, "block0.attention", "encoder.attn", d)
            norm_map(m, "block0.norm", "encoder.norm_a")
        else:  # ntcre: the mixer holds the attention, its Norm and the memory's projections
            attention_map(m, "block0.mixer.attention", "encoder.attn", d)
            norm_map(m, "block0.mixer.norm", "encoder.norm_a")
            linear_map(m, "block0.mixer.nu", "encoder.w_nu")
            linear_map(m, "block0.mixer.xi", "encoder.w_xi")
            linear_map(m, "block0.mixer.read_out", "encoder.w_r", bias=False)
            norm_map(m, "block0.norm", "encoder.norm_m")
            norm_map(m, "block0.out_norm", "encoder.norm_h")
        transition_map(m, "block0.transition", "encoder.trans", cfg["transition"])
        if cfg["cpd"]:
            linear_map(m, "halting", "encoder.halt")
        norm_map(m, "head.norm", "re_head.bnh")
        norm_map(m, "tail.norm", "re_head.bnt")
    linear_map(m, "head.w0", "re_head.w0h")
    linear_map(m, "head.w1", "re_head.w1h")
    linear_map(m, "tail.w0", "re_head.w0t")
    linear_map(m, "tail.w1", "re_head.w1t")
    m["biaffine.L"] = ("re_head.L", biaffine(d, C))
    linear_map(m, "ner", "ner_head")
    return m


# mare parameters the peer has no counterpart for (with the reason): none at present.
PEER_HAS_NO = {}


MOMENTUM = 0.1  # both sides' batch-norm momentum


def peer_buffers(mare_buffers, m, iterations_run):
    """mare's running statistics in the peer's form: {peer buffer: mare's value}.

    A batch norm of utre's and ntcre's shared block keeps one set of running statistics
    per iteration in mare (<norm>.running_mean, <norm>.running_mean.t1, ...: nn::Norm),
    and one set for all iterations in the peer, updated once an iteration. From mare's
    sets after the step (each updated once from its initial value r0) each iteration's
    batch statistic is s_t = (r_t - (1 - m) r0) / m; the peer's set is the same updates
    chained in iteration order: r <- (1 - m) r + m s_t for t = 0 .. iterations_run - 1.
    """
    sets = {}
    for name, a in mare_buffers.items():
        parts = name.split(".")
        t = 0
        if parts[-1].startswith("t") and parts[-1][1:].isdigit():
            t, parts = int(parts[-1][1:]), parts[:-1]
        stem, stat = ".".join(parts[:-1]), parts[-1]
        sets.setdefault((stem, stat), {})[t] = a.astype(np.float64)
    out = {}
    for (stem, stat), by_t in sets.items():
        peer = m.get(stem + ".gamma")
        key = None if peer is None else peer[0].rsplit(".", 1)[0] + "." + stat
        r0 = 0.0 if stat == "running_mean" else 1.0
        if len(by_t) == 1:
            out[key or stem + "." + stat] = by_t[0]
            continue
        r = np.full_like(by_t[0], r0)
        for t in range(iterations_run):
            r = (1 - MOMENTUM) * r + (by_t[t] - (1 - MOMENTUM) * r0)
        out[key or stem + "." + stat] = r
    return out


def sinusoid(T, d):
    """mare's position signal for bran (models/layers.cpp position_rows, t = 0)."""
    i = np.arange(T)[:, None]
    j = np.arange(d)[None, :]
    freq = 10000.0 ** (-(j - j % 2) / d)
    return np.where(j % 2 == 0, np.sin(i * freq), np.cos(i * freq))


# ----------------------------------------------------------------- one case


def run_mare(mare, data, model, task, out, seed, batch):
    cmd = [mare, "inspect", "step", "--model", model, "--data", data, "--task", task,
           "--seed", str(seed), "--batch", str(batch), "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


# A ReLU or ReLU6 pre-activation within about float32's rounding of a threshold (0, or 6)
# is decided by whichever float32 implementation computes it. Where mare's gradients
# differ from the reference on a step, the reference is computed again with one such
# decision reversed: the unit nearest a threshold in one call of relu/relu6 (each call in
# turn; exact zeros are padded rows, not ties), when it lies within TIE x the call's
# max|x|. mare passes if it agrees with one of them, and a note names the flip.
TIE = 1e-5


class _FlipRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, top, flip, seen):
        ctx.save_for_backward(x)
        ctx.top, ctx.flip, ctx.seen = top, flip, seen
        return x.clamp(min=0) if top is None else x.clamp(0, top)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x = x.contiguous()
        top = ctx.top
        d = x > 0
        if top is not None:
            d = d & (x < top)
        if ctx.flip:
            gap = x.abs().masked_fill(x == 0, float("inf"))
            if top is not None:
                gap = torch.minimum(gap, (x - top).abs())
            i = int(torch.argmin(gap))
            if float(gap.reshape(-1)[i]) <= TIE * float(x.abs().max()):
                d = d.clone().contiguous()
                d.view(-1)[i] = ~d.view(-1)[i]
                ctx.seen.append(float(x.view(-1)[i]))
        return g * d.to(g.dtype), None, None, None


def functional_with_flip(F, call, seen):
    """torch.nn.functional whose `call`-th relu/relu6 call reverses its nearest tie."""
    import types
    ns = types.SimpleNamespace(**{k: getattr(F, k) for k in dir(F) if not k.startswith("__")})
    count = [0]

    def make(top):
        def f(x, inplace=False):
            k = count[0]
            count[0] += 1
            return _FlipRelu.apply(x, top, k == call, seen)
        return f

    ns.relu, ns.relu6 = make(None), make(6.0)
    return ns, count


class PeerStep:
    """The peer built as mare's model, mare's weights loaded, one step run in `dtype`."""

    def __init__(self, models, index, arrays, dtype):
        cfg, task = index["config"], index["task"]
        v, T = cfg["vocab"], index["batch"]["T"]
        pc = models.Config(model=cfg["base"], ngram=cfg["ngram"], transition=cfg["transition"],
                           cpd=cfg["cpd"], norm=cfg["norm"], d=cfg["d"], heads=cfg["heads"],
                           iterations=cfg["iterations"], max_steps=cfg["max_steps"], dropout=0.0,
                           vocab=v["words"], n_grams=max(v["ngrams"], 1), n_pos_tags=0,
                           n_ner_tags=v["ner_tags"], n_classes=v["relations"], max_len=T)
        if cfg["base"] == "ntcre":
            pc.mem_slots, pc.mem_width, pc.read_heads = cfg["slots"], cfg["word"], cfg["read_heads"]
        torch.manual_seed(0)
        self.model = models.RelationExtractor(pc).to(dtype)
        self.named = dict(self.model.named_parameters())
        self.map = mapping(cfg)
        self.problems, self.covered = [], {}
        named, mp = self.named, self.map
        # mare's weights where mapped; the peer's other parameters to zero, BRAN's
        # position table to mare's fixed signal
        with torch.no_grad():
            for p in named.values():
                p.zero_()
            for name, a in arrays["params"].items():
                if name not in mp:
                    if name not in PEER_HAS_NO:
                        self.problems.append(f"mare parameter {name} has no counterpart in the peer")
                    continue
                pname, lay = mp[name]
                if pname not in named:
                    self.problems.append(f"mare parameter {name} maps to {pname}, which the peer lacks")
                    continue
                val = torch.from_numpy(np.ascontiguousarray(lay.to(a.astype(np.float64))))
                target = named[pname] if lay.rows is None else named[pname][lay.rows]
                if tuple(target.shape) != tuple(val.shape):
                    self.problems.append(f"{name} {a.shape} -> {pname} {tuple(target.shape)}: "
                                         "shapes differ")
                    continue
                target.copy_(val.to(dtype))
                self.covered.setdefault(pname, []).append(name)
            if cfg["base"] == "bran":
                named["position.weight"].copy_(torch.from_numpy(sinusoid(T, cfg["d"])).to(dtype))
        b = peer_batch(arrays, task)
        for k in ("mask", "head_mask", "tail_mask"):
            if k in b:
                b[k] = b[k].to(dtype)
        cw = index.get("class_weights")
        cw = torch.tensor(cw, dtype=dtype) if cw else None
        self.model.train()
        loss = self.model.loss(b, task=task, class_weights=cw)
        loss.backward()
        self.loss = loss.item()
        # the gradients in mare's layout, float64
        self.grads = {}
        for name in arrays["params"]:
            if name not in mp or mp[name][0] not in named:
                continue
            pname, lay = mp[name]
            g = named[pname].grad
            g = torch.zeros_like(named[pname]) if g is None else g
            g = g if lay.rows is None else g[lay.rows]
            g = lay.back(g.detach().double().numpy())
            if name == "embed.entity_tag.table":  # mare's <pad> row 0: no gradient
                g = np.concatenate([np.zeros((1, g.shape[1])), g])
            self.grads[name] = g
        self.buffers = {k: b.double().numpy() for k, b in self.model.named_buffers()}


def difference(got, ref, scale):
    """A tensor's error against the float64 reference: relative to its largest entry (with
    an absolute floor), or, for a gradient that is zero in exact arithmetic, its size."""
    peak = float(np.abs(ref).max())
    if peak <= ZERO * scale:
        return float(np.abs(got).max()) / (NOISE * scale), True
    return float(np.abs(got - ref).max()) / max(peak, FLOOR * scale), False


def check_case(models, label, index, arrays, verbose):
    cfg = index["config"]
    assert cfg["dropout"] == 0, "the comparison needs +dropout=0"
    B, T = index["batch"]["B"], index["batch"]["T"]
    ref = PeerStep(models, index, arrays, torch.float64)
    # The same peer in float32: how far float32 arithmetic alone lands from the reference
    # on this step (a ReLU or halting decision near its threshold can move a gradient by
    # more than TOLERANCE). mare passes where it is within TOLERANCE, or within SLACK x
    # the float32 peer's own error.
    f32 = PeerStep(models, index, arrays, torch.float32)
    problems, notes = list(ref.problems), []
    for name in arrays["params"]:
        if name in PEER_HAS_NO:
            notes.append(f"mare-only {name}: {PEER_HAS_NO[name]}")
    grads = arrays.get("grads", {})

    mare_loss = index["loss"]
    loss_err = abs(ref.loss - mare_loss) / max(abs(ref.loss), 1e-12)
    loss_f32 = abs(f32.loss - ref.loss) / max(abs(ref.loss), 1e-12)
    if loss_err > max(TOLERANCE, SLACK * loss_f32):
        problems.append(f"loss: mare {mare_loss:.8g} peer {ref.loss:.8g} (rel {loss_err:.2e})")

    def gradient_rows(ref, f32):
        scale = max([float(np.abs(g).max()) for g in ref.grads.values()] + [1e-30])
        rows, problems = [], []  # rows: (error, name, |ref|, |mare|, float32 peer's error)
        for name, g in ref.grads.items():
            mg = grads.get(name)
            mg = np.zeros_like(g) if mg is None else mg.astype(np.float64)
            if mg.shape != g.shape:
                problems.append(f"{name}: gradient shapes {mg.shape} and {g.shape}")
                continue
            err, zero = difference(mg, g, scale)
            e32, _ = difference(f32.grads[name], g, scale)
            tag = name + (" (zero)" if zero else "")
            rows.append((err, tag, float(np.abs(g).max()), float(np.abs(mg).max()), e32))
            if not np.all(np.isfinite(mg)):
                problems.append(f"{name}: mare's gradient is not finite")
            elif err > max(TOLERANCE, SLACK * e32):
                problems.append(f"gradient {tag}: err {err:.2e} (float32 peer {e32:.2e}; "
                                f"|peer| {rows[-1][2]:.3e}, |mare| {rows[-1][3]:.3e})")
        return rows, problems, scale

    rows, grad_problems, scale = gradient_rows(ref, f32)
    if grad_problems:
        # One ReLU decision at a float32 tie reversed in the reference, each call in turn.
        calls = None
        call = 0
        while calls is None or call < calls:
            F, seen = models.F, []
            models.F, count = functional_with_flip(F, call, seen)
            try:
                alt = PeerStep(models, index, arrays, torch.float64)
                calls = count[0]
                if not seen:
                    call += 1
                    continue
                models.F, _ = functional_with_flip(F, call, [])
                alt32 = PeerStep(models, index, arrays, torch.float32)
            finally:
                models.F = F
            alt_rows, alt_problems, _ = gradient_rows(alt, alt32)
            if verbose:
                print(f"    relu call {call} flipped at {seen}: {alt_problems[:1] or 'agrees'}")
            if not alt_problems:
                notes.append(f"agrees with the reference whose ReLU decision at x = {seen[0]:.3g} "
                             f"(relu call {call}, within {TIE:g} x its max|x| of the threshold) "
                             f"is reversed: a float32 rounding flip; without: {grad_problems[0]}")
                rows, grad_problems = alt_rows, []
                break
            call += 1
    problems += grad_problems
    # the peer's parameters no mare parameter maps to
    for pname, p in ref.named.items():
        if pname in ref.covered:
            continue
        g = 0.0 if p.grad is None else float(p.grad.abs().max())
        notes.append(f"peer-only {pname} {tuple(p.shape)}: max |grad| {g:.2e} "
                     f"({g / scale:.1e} of the step's largest)")
    # batch-norm running statistics after the step (running means of zero-mean inputs are
    # 0 up to rounding: an absolute floor)
    steps = arrays.get("outputs", {}).get("halting_steps")
    run = int(steps.max()) if steps is not None else cfg["iterations"]
    for pb, a in peer_buffers(arrays.get("buffers", {}), ref.map, run).items():
        name = pb
        if pb not in ref.buffers:
            problems.append(f"mare buffer {name} has no counterpart in the peer")
            continue
        r = ref.buffers[pb]
        err = float(np.abs(a - r).max()) / max(float(np.abs(r).max()), 1e-4)
        e32 = float(np.abs(f32.buffers[pb] - r).max()) / max(float(np.abs(r).max()), 1e-4)
        if err > max(TOLERANCE, SLACK * e32):
            problems.append(f"buffer {name}: rel {err:.2e} (float32 peer {e32:.2e})")
        rows.append((err, "buffer " + name, float(np.abs(r).max()), float(np.abs(a).max()), e32))

    rows.sort(reverse=True)
    grad_rows = [r for r in rows if not r[1].startswith("buffer ")]
    nonzero = [r for r in grad_rows if not r[1].endswith(" (zero)")]
    worst = nonzero[0] if nonzero else (0.0, "-", 0, 0, 0)
    status = "ok" if not problems else "DIFFERS"
    print(f"{label:18s} {status:7s} B {B} T {T} loss mare {mare_loss:.6f} peer {ref.loss:.6f} "
          f"(rel {loss_err:.1e}); {len(grad_rows)} gradients, worst {worst[1]} {worst[0]:.2e} "
          f"(float32 peer {worst[4]:.2e}), {len(grad_rows) - len(nonzero)} zero in exact "
          "arithmetic")
    for r in rows[: (len(rows) if verbose else 3)]:
        print(f"    {r[0]:.2e}  {r[1]}  (|ref| {r[2]:.2e}, |mare| {r[3]:.2e}, float32 peer {r[4]:.2e})")
    for n in notes:
        print(f"    note: {n}")
    for p in problems:
        print(f"    FAIL: {p}")
    return not problems, worst[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mare", required=True, help="the mare binary")
    ap.add_argument("--peers", default=None,
                    help="folder of models.py (default: ../shared/peers beside the repository)")
    ap.add_argument("--data", default="cdr",
                    help="mare data source (default: cdr, the shipped BioCreative V CDR; "
                         "e.g. semeval2018:1.1, or synth: a generated 20-document synth-cdr)")
    ap.add_argument("--cases", default=None, help="comma-separated case labels (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--keep", default=None, help="keep mare's dumps in this folder")
    ap.add_argument("--verbose", action="store_true", help="every tensor's error")
    a = ap.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    peers = a.peers or os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "peers"))
    if not os.path.isfile(os.path.join(peers, "models.py")):
        skip(f"no peer implementation at {peers}/models.py")
    sys.path.insert(0, peers)
    import models  # noqa: E402  (the peer, loaded from its folder)

    torch.set_num_threads(1)  # small tensors: a second thread buys little, and loses much on a busy machine
    work = a.keep or tempfile.mkdtemp(prefix="mare-peercheck-")
    os.makedirs(work, exist_ok=True)
    try:
        data = a.data
        if data == "synth":
            folder = os.path.join(work, "cdr")
            subprocess.run([a.mare, "data", "generate", "synth-cdr", "--out", folder, "--seed", "1",
                            "--docs", "20"], check=True, capture_output=True)
            data = "synth-cdr:" + folder
        wanted = None if a.cases is None else set(a.cases.split(","))
        failed, summary = [], []
        for label, model, task in CASES:
            if wanted is not None and label not in wanted:
                continue
            out = os.path.join(work, label.replace(" ", "-"))
            shutil.rmtree(out, ignore_errors=True)
            run_mare(a.mare, data, model, task, out, a.seed, a.batch)
            index, arrays = load_step(out)
            ok, worst = check_case(models, label, index, arrays, a.verbose)
            summary.append((label, worst))
            if not ok:
                failed.append(label)
        print("worst relative gradient difference per case: " +
              ", ".join(f"{l} {w:.1e}" for l, w in summary))
        if failed:
            print(f"{len(failed)} case(s) differ: {', '.join(failed)}")
            return 1
        print(f"all {len(summary)} cases agree (within {TOLERANCE:g}, or {SLACK:g} x the float32 "
              "peer's own error)")
        return 0
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

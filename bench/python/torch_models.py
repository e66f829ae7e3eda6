"""Real-size torch programs: eager vs torch.compile with Inductor vs torch.compile with insitu, in
one process, each backend's rounds alternating, median per step (bench/README.md has the figures):

  decode-per-layer   GPT-2-small decode step (12 layers, d=768, 12 heads, vocab 50,257) with a
                     preallocated f32 cache of 1,024 positions per layer, K and V [T, H, Dh]
                     each, the new row written with index_copy_
  decode-views       the same with one 5-D cache [12, 2, 1024, 12, 64] written through views
                     (cache[l, 0].index_copy_(0, pos, k))
  decode-layers-TD   the same with K and V caches [12, 1024, 768] ([layers, T, D])
  mlp-adam           a 3-layer MLP (1024 wide, batch 256) forward, backward and Adam step
  transformer-adamw  a 4-layer transformer (d=512, 8 heads, batch 4 x 128, vocab 8,192) with
                     F.scaled_dot_product_attention: forward, backward, AdamW(foreach=True)
                     step, compiled whole

First-call time (compile and one run) is printed for each backend. Every compiled result is
checked against eager before timing; a graph that falls back to eager is reported.

    $(scripts/python-env)/bin/python bench/python/torch_models.py [--threads 2] [--rounds 5]
        [--only NAME,...]      (PYTHONPATH=build/python, or the package installed)
"""
import argparse
import math
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

import insitu.torch

warnings.filterwarnings("ignore")

LAYERS, WIDTH, HEADS, VOCAB, POSITIONS = 12, 768, 12, 50257, 1024
HEAD = WIDTH // HEADS


def gpt2_weights(generator):
    def randn(*shape, scale=0.02):
        return torch.randn(*shape, generator=generator) * scale

    layers = []
    for _ in range(LAYERS):
        layers.append({"ln1": (torch.ones(WIDTH), torch.zeros(WIDTH)), "qkv": (randn(WIDTH, 3 * WIDTH), torch.zeros(3 * WIDTH)),
                       "proj": (randn(WIDTH, WIDTH), torch.zeros(WIDTH)), "ln2": (torch.ones(WIDTH), torch.zeros(WIDTH)),
                       "fc": (randn(WIDTH, 4 * WIDTH), torch.zeros(4 * WIDTH)), "out": (randn(4 * WIDTH, WIDTH), torch.zeros(WIDTH))})
    return {"tokens": randn(VOCAB, WIDTH), "positions": randn(POSITIONS, WIDTH), "layers": layers,
            "ln_f": (torch.ones(WIDTH), torch.zeros(WIDTH))}


def decode_step(weights, write, read, token, pos):
    """One token through GPT-2: write(l, k, v) stores the new row, read(l) gives K, V [H, T, Dh]."""
    x = weights["tokens"][token] + weights["positions"][pos]  # [1, d]
    visible = torch.arange(POSITIONS) <= pos  # [T]
    for layer, w in enumerate(weights["layers"]):
        h = F.layer_norm(x, (WIDTH,), *w["ln1"])
        q, k, v = (h @ w["qkv"][0] + w["qkv"][1]).split(WIDTH, dim=-1)
        write(layer, k.view(1, HEADS, HEAD), v.view(1, HEADS, HEAD))
        keys, values = read(layer)
        y = F.scaled_dot_product_attention(q.view(HEADS, 1, HEAD), keys, values, attn_mask=visible)
        x = x + y.reshape(1, WIDTH) @ w["proj"][0] + w["proj"][1]
        h = F.layer_norm(x, (WIDTH,), *w["ln2"])
        x = x + F.gelu(h @ w["fc"][0] + w["fc"][1]) @ w["out"][0] + w["out"][1]
    return F.layer_norm(x, (WIDTH,), *weights["ln_f"]) @ weights["tokens"].t()


def decode_per_layer(weights):
    caches = [(torch.zeros(POSITIONS, HEADS, HEAD), torch.zeros(POSITIONS, HEADS, HEAD)) for _ in range(LAYERS)]

    def step(token, pos):
        def write(layer, k, v):
            caches[layer][0].index_copy_(0, pos, k)
            caches[layer][1].index_copy_(0, pos, v)

        return decode_step(weights, write, lambda layer: (caches[layer][0].transpose(0, 1), caches[layer][1].transpose(0, 1)),
                           token, pos)

    return step, lambda: [c.zero_() for pair in caches for c in pair]


def decode_views(weights):
    cache = torch.zeros(LAYERS, 2, POSITIONS, HEADS, HEAD)

    def step(token, pos):
        def write(layer, k, v):
            cache[layer, 0].index_copy_(0, pos, k)
            cache[layer, 1].index_copy_(0, pos, v)

        return decode_step(weights, write, lambda layer: (cache[layer, 0].transpose(0, 1), cache[layer, 1].transpose(0, 1)),
                           token, pos)

    return step, cache.zero_


def decode_layers_td(weights):
    keys, values = torch.zeros(LAYERS, POSITIONS, WIDTH), torch.zeros(LAYERS, POSITIONS, WIDTH)

    def step(token, pos):
        def write(layer, k, v):
            keys[layer].index_copy_(0, pos, k.reshape(1, WIDTH))
            values[layer].index_copy_(0, pos, v.reshape(1, WIDTH))

        def read(layer):
            return (keys[layer].view(POSITIONS, HEADS, HEAD).transpose(0, 1),
                    values[layer].view(POSITIONS, HEADS, HEAD).transpose(0, 1))

        return decode_step(weights, write, read, token, pos)

    return step, lambda: (keys.zero_(), values.zero_())


class Block(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.fc, self.out = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Transformer(torch.nn.Module):
    def __init__(self, layers=4, width=512, heads=8, vocab=8192, length=128):
        super().__init__()
        self.embed, self.position = torch.nn.Embedding(vocab, width), torch.nn.Embedding(length, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm, self.head = torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def training(make_model, make_optimizer, make_batch, loss_of):
    """A step factory per backend: each gets its own copy of the model and optimizer."""
    torch.manual_seed(0)
    base = make_model()
    batch = make_batch()

    def fresh():
        model = make_model()
        model.load_state_dict(base.state_dict())
        optimizer = make_optimizer(model.parameters())

        def step():
            optimizer.zero_grad(set_to_none=False)
            loss = loss_of(model, *batch)
            loss.backward()
            optimizer.step()
            return loss

        return step

    return fresh


def mlp_adam():
    def make_model():
        return torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                   torch.nn.ReLU(), torch.nn.Linear(1024, 10))

    return training(make_model, lambda p: torch.optim.Adam(p, lr=1e-3, foreach=True),
                    lambda: (torch.randn(256, 1024), torch.randint(0, 10, (256,))),
                    lambda model, x, y: F.cross_entropy(model(x), y))


def transformer_adamw():
    def loss_of(model, tokens):
        logits = model(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))

    return training(lambda: Transformer(), lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
                    lambda: (torch.randint(0, 8192, (4, 129)),), loss_of)


BACKENDS = ("eager", "inductor", "insitu")


def compiled(fn, backend):
    if backend == "eager":
        return fn
    return torch.compile(fn, backend="insitu" if backend == "insitu" else "inductor", dynamic=False)


def measure(name, runs, check, rounds, calls):
    """runs: backend -> callable; check(backend, result) raises on a wrong result."""
    first = {}
    for backend, run in runs.items():
        graphs_before = len(insitu.torch.compiled_graphs)
        start = time.perf_counter()
        result = run()
        first[backend] = time.perf_counter() - start
        check(backend, result)
        fallbacks = [g for g in insitu.torch.compiled_graphs[graphs_before:] if g.executable is None]
        for g in fallbacks:
            print(f"  {name}: {backend} graph {g.name} falls back to eager: {g.fallback[:200]}")
    times = {backend: [] for backend in runs}
    for _ in range(rounds):
        for backend, run in runs.items():
            start = time.perf_counter()
            for _ in range(calls):
                run()
            times[backend].append((time.perf_counter() - start) / calls * 1e3)
    medians = {backend: statistics.median(t) for backend, t in times.items()}
    eager, inductor = medians.get("eager"), medians.get("inductor")
    line = f"{name:18s}"
    for backend in runs:
        line += f"  {backend} {medians[backend]:8.2f} ms (first {first[backend]:6.2f} s)"
    if "insitu" in medians:
        line += f"  | insitu/inductor {medians['insitu'] / inductor:.2f}x, insitu/eager {medians['insitu'] / eager:.2f}x"
        line += f", compile insitu/inductor {first['insitu'] / first['inductor']:.2f}x"
    print(line, flush=True)


def bench_decode(name, make, weights, rounds, calls):
    runs, reference = {}, None
    states = {}
    for backend in BACKENDS:
        step, reset = make(weights)
        reset()
        fn = compiled(step, backend)
        states[backend] = (fn, reset)
        token, pos = torch.tensor([464]), torch.tensor([7])
        runs[backend] = (lambda fn=fn, token=token, pos=pos: fn(token, pos))
    reference = runs["eager"]()

    def check(backend, result):
        if not torch.allclose(result, reference, rtol=1e-3, atol=1e-3):
            raise AssertionError(f"{name}: {backend} differs from eager by {(result - reference).abs().max().item()}")

    measure(name, runs, check, rounds, calls)


def bench_training(name, factory, rounds, calls):
    runs = {backend: compiled(factory(), backend) for backend in BACKENDS}
    reference = {}

    def check(backend, loss):
        reference.setdefault("loss", loss.item())
        if not math.isclose(loss.item(), reference["loss"], rel_tol=1e-4):
            raise AssertionError(f"{name}: {backend}'s first loss {loss.item()} differs from eager's {reference['loss']}")

    measure(name, runs, check, rounds, calls)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    insitu.default_threads = options.threads
    chosen = set(filter(None, options.only.split(",")))

    def wanted(name):
        return not chosen or name in chosen

    print(f"torch {torch.__version__}, {options.threads} threads, median of {options.rounds} alternating rounds")
    with torch.no_grad():
        weights = gpt2_weights(torch.Generator().manual_seed(0))
        for name, make in (("decode-per-layer", decode_per_layer), ("decode-views", decode_views),
                           ("decode-layers-TD", decode_layers_td)):
            if wanted(name):
                bench_decode(name, make, weights, options.rounds, calls=5)
    if wanted("mlp-adam"):
        bench_training("mlp-adam", mlp_adam(), options.rounds, calls=5)
    if wanted("transformer-adamw"):
        bench_training("transformer-adamw", transformer_adamw(), options.rounds, calls=2)


if __name__ == "__main__":
    main()

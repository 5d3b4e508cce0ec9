"""Case study C's model and data: a small character-level transformer trained on text
that Python itself ships (no downloads).

:func:`corpus` joins the docstrings of a fixed list of standard-library modules and the
Zen of Python (the ``this`` module, decoded), keeping printable ASCII;
:class:`CharTransformer` is a pre-norm decoder (learned positions, causal multi-head
attention, GELU MLP) whose every linear layer is ``torch.nn.Linear`` - the GEMMs a
recipe of :mod:`workbench.torch` quantises - and whose attention products are
``torch.matmul`` (run on the policy's ``high`` unit); :func:`batches` draws training
windows with a seeded generator.  Used by notebooks/charlm_recipes.py and
benchmarks/bench_torch.py.
"""
from __future__ import annotations

import codecs
import contextlib
import importlib
import io
import math

import torch

__all__ = ["CORPUS_MODULES", "corpus", "encode", "CharTransformer", "batches"]

#: Standard-library modules whose docstrings make the corpus (with the Zen of Python).
CORPUS_MODULES = ("json", "functools", "itertools", "collections", "argparse", "textwrap", "string", "random",
                  "statistics", "fractions", "decimal", "heapq", "bisect", "contextlib", "dataclasses", "pathlib",
                  "typing", "enum", "abc", "inspect", "unittest", "logging", "re", "csv", "difflib")


def corpus() -> str:
    """The Zen of Python and the docstrings (module, classes, functions) of
    :data:`CORPUS_MODULES`, printable ASCII and newlines only."""
    with contextlib.redirect_stdout(io.StringIO()):   # importing this prints the Zen
        import this
    parts = [codecs.decode(this.s, "rot13")]
    for name in CORPUS_MODULES:
        mod = importlib.import_module(name)
        parts.append(mod.__doc__ or "")
        for attr in sorted(vars(mod)):
            obj = getattr(mod, attr)
            doc = getattr(obj, "__doc__", None)
            if (not attr.startswith("_") and getattr(obj, "__module__", None) == name and isinstance(doc, str)):
                parts.append(doc)
    text = "\n\n".join(p.strip() for p in parts if p.strip())
    return "".join(c if (" " <= c <= "~" or c == "\n") else " " for c in text)


def encode(text: str) -> tuple[torch.Tensor, list[str]]:
    """Character ids of ``text`` (int64) and the vocabulary (sorted characters)."""
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    return torch.tensor([index[c] for c in text], dtype=torch.int64), vocab


class _Block(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class CharTransformer(torch.nn.Module):
    """Decoder-only transformer over characters: embedding, ``layers`` blocks of
    ``heads``-head causal attention and a 4x MLP, final LayerNorm and a linear head."""

    def __init__(self, vocab: int, d: int = 64, layers: int = 2, heads: int = 4, context: int = 32) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.zeros(context, d))
        self.blocks = torch.nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)
        torch.nn.init.normal_(self.pos, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def batches(ids: torch.Tensor, batch: int, context: int, steps: int, seed: int = 0
            ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` (input, next-character target) pairs of ``batch`` random windows."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        start = torch.randint(0, len(ids) - context - 1, (batch,), generator=gen)
        x = torch.stack([ids[s:s + context] for s in start.tolist()])
        y = torch.stack([ids[s + 1:s + context + 1] for s in start.tolist()])
        out.append((x, y))
    return out

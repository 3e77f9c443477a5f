"""Random batches and tensors for the op tests."""
from types import SimpleNamespace

import numpy as np

import reference as ref


def make_batch(rng, q_lens, seq_lens, block_size, max_blocks=None, spare_blocks=3):
    """Host metadata of a batch whose requests own distinct, shuffled cache blocks."""
    q_lens = np.asarray(q_lens, np.int32)
    seq_lens = np.asarray(seq_lens, np.int32)
    needed = [max(1, -(-int(s) // block_size)) for s in seq_lens]
    max_blocks = max_blocks or max(needed)
    num_blocks = sum(needed) + spare_blocks
    perm = rng.permutation(num_blocks).astype(np.int32)
    table = np.zeros((len(seq_lens), max_blocks), np.int32)
    used = 0
    for b, n in enumerate(needed):
        table[b, :n] = perm[used:used + n]
        used += n
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    return SimpleNamespace(query_start_loc=qsl, seq_lens=seq_lens, block_table=table, num_blocks=num_blocks,
                           tokens=int(qsl[-1]))


def storage(x, kind):
    """(array to hand the library, the float64 values it holds) for a float array in dtype `kind`."""
    x = np.asarray(x, np.float32)
    if kind == "f32":
        return x, x.astype(np.float64)
    if kind == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float64)
    if kind == "bf16":
        bits = ref.to_bf16_bits(x)
        return bits, ref.from_bf16_bits(bits)
    raise ValueError(kind)


def poisoned(shape, kind):
    """An output array full of NaN in dtype `kind`'s storage."""
    if kind == "f32":
        return np.full(shape, np.nan, np.float32)
    if kind == "f16":
        return np.full(shape, np.nan, np.float16)
    if kind == "bf16":
        return np.full(shape, 0x7FC0, np.uint16)
    raise ValueError(kind)


def values(out, kind):
    """float64 values of an output array of dtype `kind`."""
    return ref.from_bf16_bits(out) if kind == "bf16" else np.asarray(out, np.float64)

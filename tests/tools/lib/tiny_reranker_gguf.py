"""Writes a tiny BERT cross-encoder (reranker) as a GGUF file, with random weights
(seeded), for llama.cpp's `llama-server --reranking`: one layer, 32 dimensions, a
word-piece vocabulary of the words the rerank check asks about plus single letters
(so any lower-case word tokenizes), and the classification head that rank pooling
reads (`cls.*`). Its scores mean nothing; they are deterministic, which is all the
check needs. Standard library only: the GGUF v3 layout written by hand (header, key
values, tensor infos, 32-byte aligned F32 data).

Usage: python3 tiny_reranker_gguf.py OUT.gguf
"""

import random
import struct
import sys

ALIGN = 32
# GGUF value types.
U32, F32, BOOL, STRING, ARRAY = 4, 6, 7, 8, 9


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, value):
    out = gguf_string(key) + struct.pack("<I", kind)
    if kind == U32:
        return out + struct.pack("<I", value)
    if kind == F32:
        return out + struct.pack("<f", value)
    if kind == BOOL:
        return out + struct.pack("<?", value)
    if kind == STRING:
        return out + gguf_string(value)
    elem, items = value
    out += struct.pack("<IQ", elem, len(items))
    for i in items:
        out += gguf_string(i) if elem == STRING else struct.pack("<i", i)
    return out


def main(path):
    rng = random.Random(0)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = "which planet has rings the moon orbits earth saturn is a with cats sleep lot".split()
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    vocab = list(dict.fromkeys(special + words + letters + ["##" + x for x in letters] + list(".,?!-")))
    n_vocab, n_embd, n_head, n_ff, n_ctx = len(vocab), 32, 2, 64, 512
    # 3: control, 1: normal.
    types = [3] * len(special) + [1] * (n_vocab - len(special))
    kvs = [
        kv("general.architecture", STRING, "bert"),
        kv("general.name", STRING, "tiny-random-reranker"),
        kv("bert.context_length", U32, n_ctx),
        kv("bert.embedding_length", U32, n_embd),
        kv("bert.feed_forward_length", U32, n_ff),
        kv("bert.block_count", U32, 1),
        kv("bert.attention.head_count", U32, n_head),
        kv("bert.attention.layer_norm_epsilon", F32, 1e-12),
        kv("bert.attention.causal", BOOL, False),
        kv("bert.pooling_type", U32, 4),  # rank
        kv("tokenizer.ggml.model", STRING, "bert"),
        kv("tokenizer.ggml.pre", STRING, "default"),
        kv("tokenizer.ggml.tokens", ARRAY, (STRING, vocab)),
        kv("tokenizer.ggml.token_type", ARRAY, (5, types)),  # 5: int32
        kv("tokenizer.ggml.token_type_count", U32, 2),
        kv("tokenizer.ggml.padding_token_id", U32, 0),
        kv("tokenizer.ggml.unknown_token_id", U32, 1),
        kv("tokenizer.ggml.cls_token_id", U32, 2),
        kv("tokenizer.ggml.bos_token_id", U32, 2),
        kv("tokenizer.ggml.seperator_token_id", U32, 3),
        kv("tokenizer.ggml.eos_token_id", U32, 3),
        kv("tokenizer.ggml.mask_token_id", U32, 4),
    ]
    tensors = []  # (name, shape as numpy writes it: outer first, values)

    def t(name, *shape, fill=None):
        n = 1
        for d in shape:
            n *= d
        vals = [fill] * n if fill is not None else [rng.gauss(0, 0.2) for _ in range(n)]
        tensors.append((name, shape, vals))

    t("token_embd.weight", n_vocab, n_embd)
    t("token_types.weight", 2, n_embd)
    t("position_embd.weight", n_ctx, n_embd)
    t("token_embd_norm.weight", n_embd, fill=1.0)
    t("token_embd_norm.bias", n_embd, fill=0.0)
    b = "blk.0."
    for p in ("attn_q", "attn_k", "attn_v", "attn_output"):
        t(b + p + ".weight", n_embd, n_embd)
        t(b + p + ".bias", n_embd, fill=0.0)
    t(b + "attn_output_norm.weight", n_embd, fill=1.0)
    t(b + "attn_output_norm.bias", n_embd, fill=0.0)
    t(b + "ffn_up.weight", n_ff, n_embd)
    t(b + "ffn_up.bias", n_ff, fill=0.0)
    t(b + "ffn_down.weight", n_embd, n_ff)
    t(b + "ffn_down.bias", n_embd, fill=0.0)
    t(b + "layer_output_norm.weight", n_embd, fill=1.0)
    t(b + "layer_output_norm.bias", n_embd, fill=0.0)
    t("cls.weight", n_embd, n_embd)
    t("cls.bias", n_embd, fill=0.0)
    t("cls.output.weight", 1, n_embd)
    t("cls.output.bias", 1, fill=0.0)

    infos, data, offset = b"", b"", 0
    for name, shape, vals in tensors:
        # GGUF lists dimensions innermost first.
        dims = list(reversed(shape))
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", 0, offset)  # F32
        blob = struct.pack("<%df" % len(vals), *vals)
        blob += b"\0" * (-len(blob) % ALIGN)
        data += blob
        offset += len(blob)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % ALIGN)
    with open(path, "wb") as f:
        f.write(head + data)


if __name__ == "__main__":
    main(sys.argv[1])

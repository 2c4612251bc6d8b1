#!/usr/bin/env python3
"""Decode steps of a small Llama-architecture model from Hugging Face transformers (random
weights, hf_llama.py's config: no download), for window_e2e.sh's llama_decode case: each pass
prefills PROMPT tokens (batch 2, SDPA attention, bf16) into a fresh KV cache, then runs STEPS
decode steps of one token each (the tokens fixed in advance: no host synchronisation between
steps). In decode steps only, layer 0's block from the first kernel of its attention (the
input RMSNorm's) to the MLP's last kernel (down_proj) is one NVTX range "decode_layer0", pushed
by a forward pre-hook on `input_layernorm` and popped by a forward hook on `mlp`:

    kerncap window extract --range 'decode_layer0@N' -- python3 hf_llama_decode.py [PASSES] [STEPS]

A range rather than kernel names: an eager layer launches the same ATen kernels (copies,
multiplies, adds) dozens of times per step, so a FROM@N..TO@M count would be the transformers
version's, not the model's. The passes repeat the same work so that, from the second pass on,
PyTorch's caching allocator holds every block a step asks for (the KV cache grows by torch.cat
each step): a window must not allocate device memory (docs/window.md). Prints a checksum of
each pass's last logits. Exit 77 when transformers is missing.
"""
import hashlib
import sys

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    print("SKIPPED: transformers is not installed")
    sys.exit(77)

PROMPT = 64


def main(argv):
    passes = int(argv[1]) if len(argv) > 1 else 3
    steps = int(argv[2]) if len(argv) > 2 else 6
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1376, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    g = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (2, PROMPT), generator=g, device="cuda")
    decode = torch.randint(0, config.vocab_size, (2, steps), generator=g, device="cuda")

    layer = model.model.layers[0]
    in_decode = [False]

    def push(_module, _args):
        if in_decode[0]:
            torch.cuda.nvtx.range_push("decode_layer0")

    def pop(_module, _args, _out):
        if in_decode[0]:
            torch.cuda.nvtx.range_pop()

    layer.input_layernorm.register_forward_pre_hook(push)
    layer.mlp.register_forward_hook(pop)
    with torch.no_grad():
        for p in range(passes):
            in_decode[0] = False
            out = model(input_ids=prompt, use_cache=True)
            cache = out.past_key_values
            in_decode[0] = True
            for s in range(steps):
                out = model(input_ids=decode[:, s:s + 1], past_key_values=cache, use_cache=True)
                cache = out.past_key_values
            in_decode[0] = False
            digest = hashlib.sha256(out.logits.float().cpu().numpy().tobytes()).hexdigest()[:16]
            print(f"pass {p}: prefill {PROMPT} + {steps} decode steps, last logits {digest}", flush=True)
            del out, cache


if __name__ == "__main__":
    main(sys.argv)

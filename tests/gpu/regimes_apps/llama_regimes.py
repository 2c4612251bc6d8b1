#!/usr/bin/env python3
"""A Llama-architecture model from Hugging Face transformers (random weights from a config, no
download) generating text the way a server does: one prefill over the prompt, then DECODE
greedy steps over one token each with the KV cache, in bf16 with SDPA attention (PyTorch's
memory-efficient backend when it takes the model, so one attention kernel meets both shapes; else
whatever SDPA picks, said on stderr). The model's
RMSNorm runs through our own CUDA kernel (librms_norm.so, built from rms_norm.cu, called with
ctypes on the model's stream), as serving stacks put their own norm kernels into a model; the
GEMMs, rotary, attention, SiLU and residual kernels are PyTorch's and cuBLAS's own. Every
kernel meets a prefill shape and a decode shape: its regimes.

    llama_regimes.py LIB [DECODE] [BATCH]
Prints the generated tokens' digest and a logits checksum (the run's output). Exit 77 when
transformers is missing.
"""
import ctypes
import hashlib
import sys

import contextlib

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama
except ImportError:
    print("SKIPPED: transformers is not installed")
    sys.exit(77)


def main(argv):
    lib = ctypes.CDLL(argv[1])
    decode = int(argv[2]) if len(argv) > 2 else 16
    batch = int(argv[3]) if len(argv) > 3 else 3  # 3 rows at decode: not a multiple of the kernel's 4 rows a block
    fn = lib.kc_rms_norm
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_void_p]
    fn.restype = ctypes.c_int

    def rms_forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        rc = fn(x.data_ptr(), self.weight.data_ptr(), y.data_ptr(), x.numel() // cols, cols,
                float(self.variance_epsilon), torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"kc_rms_norm: CUDA error {rc}")
        return y

    modeling_llama.LlamaRMSNorm.forward = rms_forward
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=8192, hidden_size=2048, intermediate_size=5632, num_hidden_layers=2,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    backend = attention_backend(config)
    g = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (batch, 256), generator=g, device="cuda")
    with torch.no_grad(), backend:
        out = model(input_ids=prompt, use_cache=True)
        past = out.past_key_values
        token = out.logits[:, -1:].argmax(-1)
        tokens = [token]
        check = float(out.logits[:, -1].float().sum())
        for _ in range(decode):
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = out.logits[:, -1:].argmax(-1)
            tokens.append(token)
            check += float(out.logits[:, -1].float().sum())
        torch.cuda.synchronize()
    digest = hashlib.sha256(torch.cat(tokens, 1).cpu().numpy().tobytes()).hexdigest()[:16]
    print(f"llama_regimes tokens {digest} logits {check:.6g}", flush=True)


def attention_backend(config):
    """SDPA's memory-efficient backend when it runs this model's attention at both shapes
    (prefill: causal over the prompt; decode: one query over the cache), so one attention kernel
    has a prefill and a decode regime (the model has as many key/value heads as query heads, as
    Llama 2 7B, so no grouped-query restriction comes in); otherwise no restriction (SDPA picks per shape)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        heads, dim = config.num_attention_heads, config.hidden_size // config.num_attention_heads
        q = torch.zeros(1, heads, 8, dim, device="cuda", dtype=torch.bfloat16)
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
            torch.nn.functional.scaled_dot_product_attention(q[:, :, :1], q, q)
        torch.cuda.synchronize()
        return sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
    except Exception as e:  # noqa: BLE001 - any refusal means: let SDPA choose
        print(f"llama_regimes: memory-efficient SDPA not usable here ({str(e)[:120]}); SDPA chooses",
              file=sys.stderr)
        return contextlib.nullcontext()


if __name__ == "__main__":
    main(sys.argv)

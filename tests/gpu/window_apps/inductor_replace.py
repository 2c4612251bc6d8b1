"""Python replacements for the Inductor window's pointwise Triton kernel (window_e2e.sh's
inductor_py and inductor_py_bad: `kerncap window validate --replace-py I..I=inductor_replace.py:gelu`,
I the window's triton_poi_fused_* operation). inductor_seq.py's a = gelu(u) over T x H bf16: Inductor
writes a in place over u (one pointer, in_out_ptr0) or from in_ptr0 to out_ptr0 (two): its
parameters start with those pointers (Inductor orders in-out, then inputs, then outputs), which
this replay gives as the op's pointer words at offsets 0 and 8.
  gelu      torch's erf GELU in fp32, rounded to bf16 (Inductor's formula: equal, or within bf16)
  gelu_bad  the same, the last row left as it was: FAILs on the region a lives in"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inductor_seq import H, T  # noqa: E402  (the app's shapes; importing it runs nothing)


def _views(win):
    pois = [o for o in win.ops if o.kind == "kernel" and o.mangled.startswith("triton_poi")]
    if len(pois) != 1:
        raise RuntimeError("expected one triton_poi_* kernel in the window, found %d: %s" %
                           (len(pois), [o.mangled for o in win.ops if o.kind == "kernel"]))
    op = pois[0]
    lead = [p for p in sorted(op.pointers, key=lambda p: p.offset) if p.offset in (0, 8)]
    if not lead or lead[0].offset != 0:
        raise RuntimeError("%s: no pointer at parameter offset 0: %s" % (op.mangled, op.pointers))
    src = win.tensor(lead[0].address, torch.bfloat16, (T, H))
    dst = win.tensor(lead[-1].address, torch.bfloat16, (T, H)) if len(lead) == 2 else src
    return src, dst


def gelu(win, stream):
    src, dst = _views(win)
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        dst.copy_(torch.nn.functional.gelu(src.float()).to(torch.bfloat16))


def gelu_bad(win, stream):
    src, dst = _views(win)
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        dst[:-1].copy_(torch.nn.functional.gelu(src[:-1].float()).to(torch.bfloat16))

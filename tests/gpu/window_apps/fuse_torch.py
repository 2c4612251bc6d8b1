"""Python replacements for tests/gpu/window_e2e.sh's fuse_py cases (`kerncap window validate
--replace-py 1..2=fuse_torch.py:gemm_silu`): fuse_app.cu's window fnorm@3..fact with fgemm and
fact (ops 1 and 2: t = h W, out = silu(t)) replaced by torch on the replay's stream, out written
directly and the intermediate t never (dead after the window: --live-out auto does not judge it).
The buffers come from fgemm's parameters as this replay launches them (kerncap.window.Op): its
one argument is fuse_app's struct Layer {x, w, W, h, t, out, rows, d}.
  gemm_silu      the replacement (equal to fp32 tolerance: another summation order)
  gemm_silu_bad  the same, leaving out's last row alone (FAILs on out's region)
  norm_kept      for ops 0..2: fnorm run as captured (window.run_op), then gemm_silu"""
import torch

torch.backends.cuda.matmul.allow_tf32 = False  # fuse_app's fgemm sums in fp32

# Offsets in struct Layer: six pointers, then rows and d.
X, W_, WW, H, T, OUT, ROWS, D = 0, 8, 16, 24, 32, 40, 48, 52


def _views(win):
    op = win.ops[1]
    rows, d = op.scalar("i", ROWS), op.scalar("i", D)
    h = win.tensor(op.pointer(H).address, torch.float32, (rows, d))
    w = win.tensor(op.pointer(WW).address, torch.float32, (d, d))
    out = win.tensor(op.pointer(OUT).address, torch.float32, (rows, d))
    return h, w, out


def gemm_silu(win, stream):
    h, w, out = _views(win)
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        t = h @ w
        torch.mul(t, torch.sigmoid(t), out=out)


def gemm_silu_bad(win, stream):
    h, w, out = _views(win)
    with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
        t = h @ w
        out[:-1].copy_((t * torch.sigmoid(t))[:-1])


def norm_kept(win, stream):
    win.run_op(0, stream)  # fnorm as the application ran it: h
    gemm_silu(win, stream)

"""Address planning and pointer-word relocation of the reproducer's restore (kerncap.cuda_vmm)."""
import struct

from kerncap import cuda_vmm as v

MB = 1 << 20


def test_blocks_are_32mib_aligned_and_merged_pieces_2mib():
    base = 0x7f0000000000
    blocks = v.plan_blocks([(base + 1 * MB, base + 3 * MB), (base + 3 * MB + 10, base + 4 * MB),
                            (base + 40 * MB, base + 41 * MB), (base + 200 * MB, base + 201 * MB)])
    assert [(b - base, e - base) for b, e, _ in blocks] == [(0, 64 * MB), (192 * MB, 224 * MB)]
    assert [(p - base, q - base) for p, q in blocks[0][2]] == [(0, 4 * MB), (40 * MB, 42 * MB)]


def test_rewrite_words_moves_only_aligned_pointers_into_moved_spans():
    moves = [(0x1000, 0x2000, 0x9000)]
    data = bytearray(struct.pack("<QQQQ", 0x1008, 0x2000, 0x0fff, 0x1fff) + b"\x08\x10")
    assert v.rewrite_words(data, 0x5000, moves) == 2
    assert struct.unpack_from("<QQQQ", data) == (0x9008, 0x2000, 0x0fff, 0x9fff)
    # Words are taken at 8-byte-aligned device addresses: data living at ...4 starts 4 bytes in.
    odd = bytearray(b"\0" * 4 + struct.pack("<Q", 0x1010))
    assert v.rewrite_words(odd, 0x5004, moves) == 1 and struct.unpack_from("<Q", odd, 4)[0] == 0x9010
    assert v.rewrite_words(bytearray(16), 0, []) == 0
    p = v.Placement(moves=moves)
    assert p.translate(0x1800) == 0x9800 and p.translate(0x3000) == 0x3000

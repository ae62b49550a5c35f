"""The launcher over the shapes serving meets: batch sizes (concurrent sequences) by context
lengths. Under `tilefit capture --module pytest` each parametrized test is one shape, judged on
every target: the report, the summary and the JUnit file say which shapes reach a config that
does not fit.

    tilefit capture --module pytest --targets rx-9070-xt,rtx-pro-6000,h100 \\
        --junit shapes.xml -- examples/shapes/test_decode_shapes.py
"""

import pytest
import torch

from decode_attention import decode

HEADS, HEAD_DIM = 32, 128


@pytest.mark.parametrize("seq_len", [512, 4096, 32768])
@pytest.mark.parametrize("num_seqs", [1, 16, 256])
def test_decode(num_seqs, seq_len):
    q = torch.randn(num_seqs * HEADS, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(seq_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(seq_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    assert decode(q, k, v, num_seqs, seq_len).shape == q.shape

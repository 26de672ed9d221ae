"""selfattn.example, the book's worked example (chapter 3), and the guards moved out of chapter 3.

The sentence: 猫 喝了 牛奶 然后 它 睡了 / cat drank milk then it slept. The claims the chapter
makes about it are checked here from the numbers, not from the printed tables.
"""

import torch

from selfattn import example
from selfattn.functional import scaled_dot_product_attention
from selfattn.self_attention import SelfAttention

CAT, DRANK, MILK, THEN, IT, SLEPT = range(6)


def walk():
    x = example.embeddings()
    w_q, w_k, w_v = example.projections()
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    a = (q @ k.T / 2).softmax(dim=-1)
    return x, q, k, v, a, a @ v


def test_shapes_and_fresh_tensors():
    x = example.embeddings()
    assert x.shape == (6, 4) and x.dtype == torch.float32
    assert all(w.shape == (4, 4) for w in example.projections())
    x[0, 0] = 99.0
    example.projections()[0][0, 0] = 99.0
    assert example.embeddings()[0, 0] == 1.0 and example.projections()[0][0, 0] == 0.0


def test_keys_drop_the_pronoun_feature_values_differ_from_x_in_one_cell():
    x, q, k, v, a, o = walk()
    assert torch.equal(k[:, :3], x[:, :3]) and (k[:, 3] == 0).all()
    diff = v - x  # W_v = I except that "pronoun" also hands over "animal"
    assert diff[IT, 0] == 1 and diff.count_nonzero() == 1
    assert torch.equal(k[IT], torch.zeros(4)) and v[IT].tolist() == [1, 0, 0, 1]


def test_qv_differs_from_qk_only_in_the_pronoun_column():
    # Chapter 3.3: matching on the values, "it" finds itself as much as "cat", and the
    # animal seekers "drank" and "slept" score "it" 4 instead of 0.
    x, q, k, v, a, o = walk()
    qk, qv = q @ k.T, q @ v.T
    assert not torch.equal(qv, qk)
    gap = qv - qk
    assert gap[:, IT].tolist() == [0, 4, 0, 0, 6, 4] and gap.count_nonzero() == 3
    assert qv[IT, IT] == qv[IT, CAT] == 6 and qk[IT, IT] == 0


def test_then_is_the_zero_vector_and_adds_nothing():
    # Chapter 3.2: "then" has none of the four features, so its query, key and value are 0.
    x, q, k, v, a, o = walk()
    for m in (x, q, k, v):
        assert (m[THEN] == 0).all()
    others = [i for i in range(6) if i != THEN]  # its value adds nothing to any output
    assert torch.allclose(o, a[:, others] @ v[others], atol=1e-7)


def test_what_attends_to_what():
    x, q, k, v, a, o = walk()
    assert a[IT].argmax() == CAT and abs(a[IT, CAT] - torch.e**3 / (torch.e**3 + 5)) < 1e-6
    assert a[SLEPT].argmax() == CAT and abs(a[SLEPT, CAT] - torch.e**2 / (torch.e**2 + 5)) < 1e-6
    assert torch.allclose(a[THEN], torch.full((6,), 1 / 6)), "a zero query spreads evenly"
    top = a[DRANK].topk(3).indices.sort().values.tolist()
    assert top == [CAT, DRANK, MILK] and torch.allclose(a[DRANK, :3], a[DRANK, 0].expand(3))
    assert set(a[CAT].topk(2).indices.tolist()) == {DRANK, SLEPT}
    assert set(a[MILK].topk(2).indices.tolist()) == {DRANK, MILK}
    # "it" has 0.84 under "animal": 0.80 from "cat" and 0.04 from its own value.
    assert abs(o[IT, 0] - (a[IT, CAT] + a[IT, IT])) < 1e-6
    assert (round(o[IT, 0].item(), 2), round(a[IT, CAT].item(), 2)) == (0.84, 0.80)
    assert round(a[IT, IT].item(), 2) == 0.04


def test_scores_asymmetric_and_diagonal_not_max():
    # Chapter 3.5 says the example shows what projections change: S is not symmetric and
    # a token need not attend most to itself.
    x, q, k, v, a, o = walk()
    s = q @ k.T
    assert s[IT, CAT] == 6 and s[CAT, IT] == 0
    assert abs(a[IT, IT] - 1 / (torch.e**3 + 5)) < 1e-6 and round(a[IT, IT].item(), 2) == 0.04


def test_package_reproduces_the_walk_exactly():
    x, q, k, v, a, o = walk()
    out, w = scaled_dot_product_attention(q, k, v)
    assert torch.equal(w, a) and torch.equal(out, o)
    attn = SelfAttention(4, 4)
    w_q, w_k, w_v = example.projections()
    with torch.no_grad():
        for lin, m in ((attn.w_q, w_q), (attn.w_k, w_k), (attn.w_v, w_v)):
            lin.weight.copy_(m.T)  # nn.Linear computes x @ weight.T
    out, w = attn(x[None])
    assert torch.equal(w[0], a) and torch.equal(out[0], o)


def test_table_labels_and_cjk_alignment():
    m = torch.tensor([[1.0, 0.25], [0.5, 0.0]])
    text = example.table(m, ["猫", "it"], ["动物", "b"])
    # A CJK character takes two columns: "动物" is as wide as "1.00", "猫" as "it".
    assert text.splitlines() == ["   动物    b", "猫 1.00 0.25", "it 0.50 0.00"]
    wide = example.table(torch.zeros(1, 1), ["then"], ["animal"], ".0f")
    assert wide.splitlines() == ["     animal", "then      0"]


def test_chapter3_formula_claims():
    # Moved from chapter 3.2's block: the five steps agree with the formula element by element.
    torch.manual_seed(0)
    n, d_model, d_k, d_v = 5, 8, 4, 3
    x = torch.randn(n, d_model)
    w_q, w_k, w_v = torch.randn(d_model, d_k), torch.randn(d_model, d_k), torch.randn(d_model, d_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ k.T / d_k**0.5
    a = s.softmax(dim=-1)
    o = a @ v
    for i in range(n):
        for j in range(n):
            assert torch.isclose(s[i, j], q[i] @ k[j] / d_k**0.5)
        assert torch.allclose(o[i], (a[i, :, None] * v).sum(dim=0), atol=1e-6)
    assert torch.allclose(a.sum(dim=-1), torch.ones(n)) and (a >= 0).all()


def test_chapter3_projections_break_symmetry():
    # Moved from chapter 3.5: with learnable W_q != W_k on the same unit-length x, the scores
    # are not symmetric and the diagonal is not always the row maximum.
    torch.manual_seed(0)
    n, d = 6, 16
    x = torch.randn(n, d)
    x = x / x.norm(dim=-1, keepdim=True) * d**0.5
    s_plain = x @ x.T / d**0.5
    assert torch.allclose(s_plain, s_plain.T)
    torch.manual_seed(0)
    attn = SelfAttention(d_model=d, d_k=d)
    s = attn.w_q(x) @ attn.w_k(x).T / d**0.5
    assert sum(p.numel() for p in attn.parameters()) == 3 * d * d
    assert not torch.allclose(s, s.T)
    assert not torch.equal(s.argmax(dim=-1), torch.arange(n))

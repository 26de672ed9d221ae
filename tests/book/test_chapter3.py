"""Guards moved out of chapter 3 (docs/03-qkv-formula.md) to keep its reading blocks short.

Each test repeats the page's computation (same seeds, same sizes) and makes the assertion that
stood on the page. 3.5, no projections: the weights are not symmetric only because the rows'
normalizers Z_i differ, and the diagonal is the maximum of every row, for every n and d the
page prints.
"""

import torch


def unit_tokens(n: int, d: int) -> torch.Tensor:
    x = torch.randn(n, d)
    return x / x.norm(dim=-1, keepdim=True) * d**0.5  # every token has length sqrt(d)


def test_no_projection_weights_differ_from_symmetric_only_by_row_normalizers() -> None:
    torch.manual_seed(0)
    n, d = 6, 16
    x = unit_tokens(n, d)
    s = x @ x.T / d**0.5
    a = s.softmax(dim=-1)
    z = s.exp().sum(dim=-1)  # (n,): Z_i
    za = a * z[:, None]  # Z_i * A_ij = e^{S_ij}
    assert not torch.allclose(a, a.T), "the weights themselves are not symmetric"
    assert torch.allclose(za, za.T), "A is not symmetric only because the Z_i differ"


def test_no_projection_diagonal_is_every_row_maximum() -> None:
    for n in (6, 100, 1000):
        for d in (4, 16, 64):
            torch.manual_seed(0)  # as the page's weight_on_itself(n, d)
            x = unit_tokens(n, d)
            a = (x @ x.T / d**0.5).softmax(dim=-1)
            assert torch.equal(a.argmax(dim=-1), torch.arange(n)), (n, d)


def test_two_animals_tie_wherever_the_second_one_stands() -> None:
    # Exercise 4: with a second animal, "it" gives both the same weight, because X holds no
    # position. Put "dog" (the row of "cat") at any place, even right before "it": still a tie.
    from selfattn import example

    x = example.embeddings()
    w_q, w_k, _ = example.projections()
    for at in range(1, 7):  # insert "dog" before position `at` of the sentence
        x2 = torch.cat([x[:at], x[:1], x[at:]])  # (7, 4)
        it, dog = (4 if at > 4 else 5), at
        a = (x2 @ w_q @ (x2 @ w_k).T / 2).softmax(dim=-1)
        assert a[it, 0] == a[it, dog] and a[it].argmax() in (0, dog), at

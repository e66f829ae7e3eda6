"""torch's optimizers with foreach=True (their aten._foreach_* ops) compiled whole by
backend="insitu": each step runs in insitu, matches eager, and writes the parameters and the
optimizer's state where they lie."""
import pytest

torch = pytest.importorskip("torch")
import insitu.torch  # noqa: E402


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


OPTIMIZERS = {
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=True),
    "adam_amsgrad_decay": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True, weight_decay=0.1, amsgrad=True),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True),
    "sgd_plain": lambda p: torch.optim.SGD(p, lr=1e-1, foreach=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, momentum=0.5, centered=True, foreach=True),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-1, foreach=True),
}


def _model():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_foreach_optimizer_step_runs_in_insitu_in_place_and_matches_eager(name):
    torch.manual_seed(0)
    eager, compiled = _model(), _model()
    compiled.load_state_dict(eager.state_dict())
    x, y = torch.randn(5, 6), torch.randn(5, 3)
    opt_eager, opt_compiled = OPTIMIZERS[name](eager.parameters()), OPTIMIZERS[name](compiled.parameters())
    step = torch.compile(opt_compiled.step, backend="insitu", dynamic=False)
    pointers = [p.data_ptr() for p in compiled.parameters()]
    for _ in range(4):
        for model in (eager, compiled):
            model.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt_eager.step()
        step()
    for a, b in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert [p.data_ptr() for p in compiled.parameters()] == pointers
    graphs = insitu.torch.compiled_graphs
    assert graphs and all(g.executable is not None for g in graphs), graphs
    stats = graphs[-1].stats
    assert stats["bytes_copied"] == 0 and stats["copied_back_bytes"] == 0, stats


def test_foreach_lerp_and_pow_match_eager():
    def f(xs, ys, e):
        a = torch._foreach_lerp(xs, ys, 0.3)
        b = torch._foreach_lerp(xs, ys, 0.8)
        c = torch._foreach_pow(2.0, e)
        return [p + q + r for p, q, r in zip(a, b, c)]

    xs, ys, e = [torch.randn(3), torch.randn(2, 2)], [torch.randn(3), torch.randn(2, 2)], [torch.randn(3), torch.randn(2, 2)]
    expected = f(xs, ys, e)
    actual = torch.compile(f, backend="insitu", dynamic=False)(xs, ys, e)
    for a, b in zip(actual, expected):
        torch.testing.assert_close(a, b)
    assert all(g.executable is not None for g in insitu.torch.compiled_graphs)

"""polysci.torch: torchvision bodies with random weights (and random batch-norm
statistics) compiled into one fused graph and compared with PyTorch's own
outputs; unsupported nodes and wrong inputs raise with a clear message."""
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import polysci  # noqa: E402

if not polysci.has_engine():
    pytest.skip("the library has no graph engine", allow_module_level=True)

import polysci.torch as pst  # noqa: E402


def _randomize(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.copy_(torch.rand(mod.running_mean.shape, generator=g) - 0.5)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=g) * 1.5 + 0.5)
                mod.weight.copy_(torch.rand(mod.weight.shape, generator=g) + 0.5)
                mod.bias.copy_(torch.rand(mod.bias.shape, generator=g) - 0.5)
    return m.eval()


def _body(name):
    torch.manual_seed(1)
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2().features
    if name in ("resnet18", "resnet50"):
        net = getattr(torchvision.models, name)()
        return torch.nn.Sequential(*list(net.children())[:-1])  # up to the global average pool
    if name == "googlenet":
        net = torchvision.models.googlenet(aux_logits=False, init_weights=True, transform_input=False)
        return torch.nn.Sequential(*[c for n, c in net.named_children()
                                     if n not in ("aux1", "aux2", "avgpool", "dropout", "fc")])
    raise ValueError(name)


@pytest.mark.parametrize("name,shape,fusion", [
    ("mobilenet_v2", (1, 3, 224, 224), "dp"),
    ("mobilenet_v2", (2, 3, 96, 128), "none"),
    ("resnet18", (1, 3, 224, 224), "dp"),
    ("resnet50", (1, 3, 160, 160), "dp"),
    ("resnet50", (2, 3, 64, 64), "greedy"),
    ("googlenet", (1, 3, 160, 192), "dp"),
])
def test_torchvision_body_matches_pytorch(name, shape, fusion):
    m = _randomize(_body(name), 7)
    fused = pst.compile(m, shape, fusion=fusion)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3)).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        want = m(x)
    got = fused(x)
    assert got.shape == want.shape
    assert got.is_contiguous(memory_format=torch.channels_last)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    # f32 through ~50 layers: PyTorch (oneDNN) and polysci sum in different orders
    assert err <= 2e-5 * scale, "%s %s: max error %.3g of max |y| %.3g" % (name, fusion, err, scale)
    # the same plan again, and a non-channels-last input (converted)
    again = fused(x.contiguous())
    assert torch.equal(again, got)
    assert "group" in fused.describe()


def test_measured_layer_plans_match_pytorch():
    """layer_top_k / layer_time_budget_ms: the convolutions planned as layers
    choose their schedules by timing; the body still matches PyTorch."""
    m = _randomize(_body("resnet18"), 9)
    shape = (1, 3, 64, 64)
    fused = pst.compile(m, shape, fusion="none", layer_top_k=4, layer_time_budget_ms=10)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = m(x)
    got = fused(x)
    assert (got - want).abs().max().item() <= 2e-5 * want.abs().max().item()
    with pytest.raises(polysci.ArgumentError, match="layer_time_budget_ms"):
        pst.compile(m, shape, layer_top_k=4, layer_time_budget_ms=-1)
    with pytest.raises(polysci.ArgumentError, match="layer_time_budget_ms"):
        pst.compile(m, shape, layer_top_k=4, layer_time_budget_ms="soon")


def test_unsupported_node_is_named():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)

        def forward(self, x):
            return torch.sigmoid(self.conv(x))
    with pytest.raises(polysci.Error, match="node 'sigmoid'"):
        pst.compile(M().eval(), (1, 3, 16, 16))


def test_grouped_conv_and_training_mode_rejected():
    m = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, groups=2)).eval()
    with pytest.raises(polysci.Error, match="groups 2"):
        pst.compile(m, (1, 8, 16, 16))
    with pytest.raises(polysci.Error, match="training mode"):
        pst.compile(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1)), (1, 3, 8, 8))


def test_wrong_input_shape():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval()
    fused = pst.compile(m, (1, 3, 8, 8))
    with pytest.raises(polysci.Error, match="compiled for"):
        fused(torch.zeros(1, 3, 9, 8))


def test_small_ops_exact_shapes():
    """Same-padding string, ReLU6, AvgPool2d, MaxPool2d with ceil_mode, torch.cat, a residual add."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Conv2d(5, 6, 3, padding="same", bias=False)
            self.b = torch.nn.Conv2d(5, 6, (1, 3), stride=2, padding=(0, 1))
            self.bn = torch.nn.BatchNorm2d(6)
            self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
            self.avg = torch.nn.AvgPool2d(2)
            self.dw = torch.nn.Conv2d(12, 12, 3, padding=1, groups=12)

        def forward(self, x):
            a = torch.nn.functional.relu6(self.bn(self.a(x)))
            a = self.pool(a + self.a(x))           # 7 x 6
            c = torch.cat([a, self.b(x)], 1)        # 7 x 6, 12 channels
            return self.avg(self.dw(c))
    m = _randomize(M(), 5)
    shape = (2, 5, 13, 11)
    fused = pst.compile(m, shape)
    x = torch.randn(shape)
    with torch.no_grad():
        want = m(x)
    got = fused(x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)

"""The torch modules behind test/models/*.onnx, without onnx: the exporter
(export_torch_models.py) and the GPU benchmark baselines (tools/gpu/bench.py)
both build them from here."""
import torch


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 32)
        self.fc3 = torch.nn.Linear(32, 4)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=-1)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.conv2(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class EncoderLayer(torch.nn.Module):
    """A BERT-style post-norm encoder layer written the way Hugging Face models are:
    heads split with view() on sizes read from the input, so both exporters emit
    shape arithmetic. (torch.nn.TransformerEncoder's attention does not: the
    TorchScript exporter bakes the example's sequence length into one of its
    reshapes, so a model exported that way only runs at that length.)"""

    def __init__(self, width=32, heads=4, ff=64):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.norm1 = torch.nn.LayerNorm(width)
        self.ff1 = torch.nn.Linear(width, ff)
        self.ff2 = torch.nn.Linear(ff, width)
        self.norm2 = torch.nn.LayerNorm(width)

    def forward(self, x):
        b, s, w = x.shape
        d = w // self.heads
        q, k, v = self.qkv(x).split(w, dim=-1)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5)
        attn = torch.matmul(torch.softmax(scores, dim=-1), v)
        attn = attn.transpose(1, 2).reshape(b, s, w)
        x = self.norm1(x + self.out(attn))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(16, 32)
        self.layers = torch.nn.ModuleList([EncoderLayer(), EncoderLayer()])
        self.head = torch.nn.Linear(32, 8)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class MhaEncoder(torch.nn.Module):
    """torch.nn.TransformerEncoderLayer as users write it. The TorchScript exporter
    bakes the example's sequence length into a reshape of nn.MultiheadAttention,
    so the exported model is right only at that length: kiln guards the reshape
    and refuses other lengths with a message instead of computing garbage."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                      dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def randomize_norms(model):
    # Fresh BatchNorm/LayerNorm parameters are 0/1; give them values so the test
    # exercises the normalization arithmetic.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
        if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)


MODELS = {
    # name: (module, example input shape, dynamic axes of input 'x')
    "mlp": (Mlp, (3, 16), {0: "batch"}),
    "cnn": (Cnn, (2, 3, 16, 16), {0: "batch"}),
    "encoder": (Encoder, (2, 5, 16), {0: "batch", 1: "seq"}),
    "mha_encoder": (MhaEncoder, (2, 5, 32), {0: "batch", 1: "seq"}),
}

"""LeNet (Paddle's paddle.vision.models.LeNet: the same layers and state_dict keys)."""
from ... import nn
from ...tensor.manipulation import flatten

__all__ = ["LeNet"]


class LeNet(nn.Layer):
    """LeNet for 1x28x28 inputs: two conv+ReLU+max-pool stages, then three Linear layers.
    As in Paddle, the Linear layers have no activation between them. num_classes <= 0 drops the
    fully connected part (forward then returns the [N, 16, 5, 5] features)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
        )
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, inputs):
        x = self.features(inputs)
        if self.num_classes > 0:
            x = flatten(x, 1)
            x = self.fc(x)
        return x
